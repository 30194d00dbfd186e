"""Localisation (`kata.toolkit.localise`): the part at fault found by swapping in the reference's, and the wiring
trace. The toolkit works on the student's objects in the student's process, so its tests are graders: one real
grading (kata 9.6's earlier pieces, the real runner, judge and student's process) runs the checks below on a
small student file, and each check asserts what the toolkit found."""

from __future__ import annotations

import contextlib

import pytest
import torch

from kata import runner
from kata.toolkit import CheckFailed, Mistake, assert_close
from kata.toolkit.localise import localise, merged

STUDENT = '''import torch
from torch import nn

from kata.earlier.feed_forward import FeedForward
from kata.earlier.layer_norm import LayerNorm


class Block(nn.Module):
    """ffn(norm(x)), its norm built with `eps`."""

    def __init__(self, eps=1e-5):
        super().__init__()
        self.norm = LayerNorm(4, eps=eps)
        self.ffn = FeedForward(4, 8)

    def forward(self, x):
        return self.ffn(self.norm(x))


class Miswired(Block):
    def forward(self, x):
        return self.ffn(x) + self.norm(x)


class NormTwice(Block):
    def forward(self, x):
        return self.ffn(self.norm(self.norm(x)))


def double(x):
    return 2 * x


def twice_plus_one(x):
    return double(x) + 1
'''

GRADERS = '''import contextlib

import pytest
import torch
import torch.nn.functional as F

from kata.toolkit import CheckFailed, Mistake, assert_close, remote
from kata.toolkit.localise import (
    bound, first_miswired, localise, once_each, recorded, reference_part, rewired, swapped)

NORM = Mistake("fault-in-norm", "with the reference LayerNorm in place of yours, it matches")
FFN = Mistake("fault-in-feed-forward", "with the reference FeedForward in place of yours, it matches")
WIRING = Mistake("fault-in-wiring", "with the reference parts in place of yours, it still differs")


def parts(block):
    def swap(name, slug, build):
        return lambda: swapped(block, name, reference_part(getattr(block, name), build(remote.earlier(slug))))
    return {NORM: swap("norm", "layer_norm", lambda m: m.LayerNorm(4)),
            FFN: swap("ffn", "feed_forward", lambda m: m.FeedForward(4, 8))}


def expected(block, x):
    """ffn(norm(x)) with the block's weights and LayerNorm's default eps, computed here."""
    p = dict(block.named_parameters())
    h = F.layer_norm(x, (4,), p["norm.gamma"], p["norm.beta"], eps=1e-5)
    return F.linear(torch.relu(F.linear(h, p["ffn.linear_1.weight"], p["ffn.linear_1.bias"])),
                    p["ffn.linear_2.weight"], p["ffn.linear_2.bias"]).detach()


X = torch.randn(2, 3, 4, dtype=torch.float64)


def build(student, cls="Block", **kwargs):
    return getattr(student, cls)(**kwargs).double().eval()


def test_the_part_at_fault_is_named_and_the_right_one_is_not(student):
    block = build(student, eps=0.5)
    assert localise(lambda: block(X), expected(block, X), parts(block), wiring=WIRING) == (NORM,)
    assert block.norm.eps == 0.5  # the student's own norm is back


def test_a_right_block_or_a_matching_output_localises_nothing(student):
    block = build(student)
    assert localise(lambda: block(X), expected(block, X), parts(block), wiring=WIRING) == ()


def test_parts_right_and_output_wrong_is_the_wiring_only_when_the_grader_says_so(student):
    block = build(student, "Miswired")
    want = expected(block, X)
    assert localise(lambda: block(X), want, parts(block), wiring=WIRING) == (WIRING,)
    assert localise(lambda: block(X), want, parts(block)) == ()
    assert localise(lambda: block(X), want, parts(block), wiring=lambda: ()) == ()


def test_two_faulty_parts_are_found_by_swapping_each_back(student):
    block = build(student, eps=0.5)
    want = expected(block, X)
    state = dict(block.ffn.state_dict())  # (tensors cross by value: the student's are changed there)
    block.ffn.load_state_dict(state | {"linear_1.bias": state["linear_1.bias"] + 1.0})  # not what `want` used

    def reference_ffn_with_the_old_bias():
        part = reference_part(block.ffn, remote.earlier("feed_forward").FeedForward(4, 8))
        part.load_state_dict(state)
        return swapped(block, "ffn", part)

    both = {NORM: parts(block)[NORM], FFN: reference_ffn_with_the_old_bias}
    assert localise(lambda: block(X), want, both, wiring=WIRING) == (NORM, FFN)


def test_an_error_inside_localisation_is_silence(student):
    block = build(student, eps=0.5)
    broken = {NORM: lambda: swapped(block, "no_such_part", None)}
    assert localise(lambda: block(X), expected(block, X), broken, wiring=WIRING) == ()


def test_swapped_restores_the_students_part_even_on_failure(student):
    block = build(student, eps=0.5)
    with pytest.raises(ZeroDivisionError), parts(block)[NORM]():
        assert block.norm.eps == 1e-5
        1 / 0
    assert block.norm.eps == 0.5


def test_a_function_of_the_students_module_is_swapped_for_a_lent_one(student):
    with swapped(student, "double", lambda x: 3 * x):
        assert torch.equal(student.twice_plus_one(X), 3 * X + 1)
    assert torch.equal(student.twice_plus_one(X), 2 * X + 1)


def test_rewired_replaces_the_modules_output_and_is_undone(student):
    block = build(student)
    with rewired(block, lambda x: torch.zeros_like(x)):
        assert torch.equal(block(X), torch.zeros_like(X))
    assert torch.allclose(block(X), expected(block, X))


def test_recorded_calls_are_in_order_and_stop_after_the_block(student):
    block = build(student, "Miswired")
    with recorded(block, ["norm", "ffn"]) as calls:
        out = block(X)
    assert [c.name for c in calls] == ["ffn", "norm"]
    c = once_each(calls, ["norm", "ffn"])
    assert torch.allclose(out, c["ffn"].output + c["norm"].output)
    assert bound(c["ffn"], ("x", "other")) == [c["ffn"].args[0], None]
    # The reference's wiring feeds ffn norm's output: the first miswired is the ffn.
    assert first_miswired([("norm", c["norm"].args[0], X), ("ffn", c["ffn"].args[0], c["norm"].output)]) == "ffn"
    assert first_miswired([("norm", c["norm"].args[0], X), ("mask", None, None)]) is None
    block(X)
    assert len(calls) == 2


def test_an_incomplete_trace_says_nothing(student):
    block = build(student, "NormTwice")
    with recorded(block, ["norm", "ffn"]) as calls:
        block(X)
    assert once_each(calls, ["norm", "ffn"]) is None


def test_assert_close_attaches_what_localise_finds(student):
    block = build(student, eps=0.5)
    want = expected(block, X)
    with pytest.raises(CheckFailed) as info:
        assert_close(block(X), want, localise=lambda: localise(lambda: block(X), want, parts(block)))
    assert info.value.mistakes == (NORM,)
'''


def test_the_toolkit_localises_on_a_real_grading(course, tmp_path):
    graders = tmp_path / "graders"
    graders.mkdir()
    (graders / "test_toolkit.py").write_text(GRADERS)
    student = tmp_path / "student.py"
    student.write_text(STUDENT)
    result = runner.run_kata(course, course.find("9.6"), student, graders=graders, devices="cpu", timeout=180)
    failed = {c.id: c.message for c in result.checks if not c.passed}
    assert not failed and len(result.checks) == 11, (result.outcome, result.message, failed)


RIGHT = Mistake("fault-in-part", "with the reference part, it matches")
OTHER = Mistake("classic", "a classic mistake")


def test_assert_close_localises_only_when_no_classic_mistake_matched():
    expected, actual = torch.zeros(3), torch.ones(3)
    asked = []

    def localise():
        asked.append(True)
        return (RIGHT,)

    with pytest.raises(CheckFailed) as info:
        assert_close(actual, expected, mistakes={OTHER: torch.ones(3)}, localise=localise)
    assert info.value.mistakes == (OTHER,) and not asked
    with pytest.raises(CheckFailed) as info:
        assert_close(actual, expected, mistakes={OTHER: torch.full((3,), 2.0)}, localise=localise)
    assert info.value.mistakes == (RIGHT,)
    assert_close(expected, expected, localise=localise)
    assert len(asked) == 1


def test_assert_close_is_silent_when_localisation_fails():
    with pytest.raises(CheckFailed) as info:
        assert_close(torch.ones(3), torch.zeros(3), localise=lambda: 1 / 0)
    assert info.value.mistakes == ()


def test_a_random_output_localises_nothing():
    """An output that changes from one run to the next (dropout left on) matches a swap only by chance."""
    def nothing():
        return contextlib.nullcontext()

    assert localise(lambda: torch.randn(3), torch.zeros(3), {RIGHT: nothing}, wiring=OTHER) == ()
    assert localise(lambda: torch.ones(3), torch.zeros(3), {RIGHT: nothing}, wiring=OTHER) == (OTHER,)


def test_parts_of_one_kind_at_fault_together_give_one_diagnosis():
    norm_1 = Mistake("fault-in-norm", "with the reference LayerNorm, it matches (your norm_1)")
    norm_2 = Mistake("fault-in-norm", "with the reference LayerNorm, it matches (your norm_2)")
    assert merged([norm_1, RIGHT, norm_2]) == (
        Mistake("fault-in-norm", "with the reference LayerNorm, it matches (your norm_1, your norm_2)"), RIGHT)
    assert merged([RIGHT, Mistake(RIGHT.id, "another explanation")]) == (RIGHT,)
