"""The graders' toolkit: tensor-aware messages, mistake matching, gradient checks, source scanning."""

from __future__ import annotations

import pytest
import torch

from kata.grading.failure import diagnose_error
from kata.grading.scan import scan
from kata.toolkit import CheckFailed, ErrorPattern, Mistake, assert_close
from kata.toolkit.common import OPERATOR_ERRORS, own_value_error
from kata.toolkit.compare import assert_finite, is_close, tolerance, unlike
from kata.toolkit.gradients import gradcheck

ROUNDING = Mistake("rounding", "you rounded")


def failure(actual, expected, **kwargs) -> CheckFailed:
    with pytest.raises(CheckFailed) as info:
        assert_close(actual, expected, **kwargs)
    return info.value


def test_equal_within_dtype_tolerance_passes():
    x = torch.randn(3, 4)
    assert_close(x + 1e-7, x)
    assert tolerance(torch.float64) == (1e-7, 1e-7)


def test_value_mismatch_reports_count_worst_error_and_where():
    expected = torch.zeros(2, 3)
    actual = expected.clone()
    actual[1, 2] = 0.5
    message = str(failure(actual, expected, what="the truth", context="a test input"))
    assert message.startswith("output differs from the truth for a test input:")
    assert "1 of 6 elements differ" in message
    assert "largest absolute error 0.5 at [1, 2]: got 0.5, expected 0" in message
    assert "in that row: got      [0, 0, 0.5]" in message


def test_shape_dtype_and_device_are_named():
    message = str(failure(torch.zeros(2, 3, dtype=torch.float64), torch.zeros(3, 2)))
    assert "shape: got (2, 3), expected (3, 2)" in message
    assert "dtype: got torch.float64, expected torch.float32" in message


def test_nan_and_inf_are_counted():
    actual = torch.tensor([1.0, float("nan"), float("inf")])
    message = str(failure(actual, torch.ones(3)))
    assert "NaN: 1 in your output (first at [1]), 0 expected" in message
    assert "Inf: 1 in your output (first at [2]), 0 expected" in message
    with pytest.raises(CheckFailed, match="1 NaN and 1 Inf values"):
        assert_finite(actual)


def test_not_a_tensor():
    with pytest.raises(CheckFailed, match=r"should be a torch\.Tensor .* got tuple"):
        assert_close((1, 2), torch.ones(2))


def test_matching_mistake_is_named_and_others_are_not():
    expected = torch.tensor([0.4, 1.6])
    actual = expected.round()
    other = Mistake("other", "something else")
    found = failure(actual, expected, mistakes={ROUNDING: lambda: expected.round(), other: expected * 3,
                                                Mistake("broken", "raises"): lambda: 1 / 0}).mistakes
    assert found == (ROUNDING,)


def test_a_model_that_gives_the_truth_is_not_offered():
    # Off by 1e-6 in float64: a failure, but within the 1e-5 a mistake is matched with. A model that agrees with
    # the truth on this input is no evidence of that mistake; one that differs from it still speaks.
    expected = torch.tensor([0.4, 1.6], dtype=torch.float64)
    harmless, real = Mistake("harmless", "right here"), Mistake("real", "wrong here")
    assert failure(expected + 1e-6, expected, mistakes={harmless: expected.clone()}).mistakes == (harmless,)
    assert failure(expected + 1e-6, expected, mistakes=unlike(expected, {harmless: expected.clone()})).mistakes == ()
    found = failure(expected * 3, expected, mistakes=unlike(expected, {harmless: expected.clone(),
                                                                      real: lambda: expected * 3})).mistakes
    assert found == (real,)


def test_nan_matches_nan_in_a_mistake_model():
    nan = torch.tensor([float("nan"), 1.0])
    assert is_close(nan, nan.clone()) and not is_close(nan, torch.ones(2))


def test_error_patterns_match_message_and_code():
    pattern = ErrorPattern(ROUNDING, message=r"must match", code=r"\.sum\(")
    assert pattern.matches("RuntimeError: sizes must match", "return e / e.sum(-1)")
    assert not pattern.matches("RuntimeError: sizes must match", "return e / total")
    assert not pattern.matches("ValueError: nope", "return e / e.sum(-1)")


def test_an_error_pattern_can_test_the_sizes_torch_printed():
    fits = ErrorPattern(ROUNDING, message=r"size (\d+) of (\d+)", when=lambda m: int(m[2]) % int(m[1]) == 0)
    assert fits.matches("RuntimeError: size 4 of 12", "x.view(3, 4)")
    assert not fits.matches("RuntimeError: size 5 of 12", "x.view(3, 5)")


def test_a_fallback_names_an_error_only_where_no_pattern_of_the_katas_own_does():
    own = ErrorPattern(Mistake("mask-not-bool", "a float mask"), message=r"not implemented for 'Float'", code=r"mask")
    patterns = [own, *OPERATOR_ERRORS]
    torch_says = "NotImplementedError: \"bitwise_and_cpu\" not implemented for 'Float'"
    assert diagnose_error(patterns, torch_says, "keep = mask & causal") == (own.mistake,)
    assert [m.id for m in diagnose_error(patterns, torch_says, "h = h & (h > 0)")] == ["bit-operator-on-floats"]
    assert [m.id for m in diagnose_error(patterns, "TypeError: unsupported operand type(s) for ^: 'int' and 'float'",
                                         "return d_model ^ -0.5")] == ["bit-operator-on-floats"]
    assert [m.id for m in diagnose_error(
        patterns, "RuntimeError: Boolean value of Tensor with more than one value is ambiguous",
        "if mask:")] == ["tensor-as-truth-value"]
    # Raised where no line of the student's is known (the graders' own code): no fallback speaks for it.
    assert diagnose_error(patterns, "RuntimeError: Boolean value of Tensor with more than one value is ambiguous",
                          "") == ()
    assert diagnose_error(patterns, "RuntimeError: sizes must match", "x + y") == ()


def test_the_students_own_value_error_is_told_from_torchs():
    pattern = own_value_error("The contract's only ValueError: an odd d_model.")
    assert pattern.mistake.id == "value-error-on-valid-input" and "an odd d_model" in pattern.mistake.explanation
    assert pattern.matches("ValueError: d_model must be even, got 8", 'raise ValueError(f"d_model must be even")')
    # torch's own ValueError (nn.Dropout(p=-1)) surfaces on the student's line that called torch: not theirs.
    assert not pattern.matches("ValueError: dropout probability has to be between 0 and 1, but got -1",
                               "self.dropout = nn.Dropout(dropout)")
    assert not pattern.matches("TypeError: bad operand", "raise TypeError('bad operand')")


def test_gradcheck_agrees_with_torch_on_a_correct_function():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    fn = lambda t: torch.tanh(t) * t.sum(-1, keepdim=True)  # noqa: E731
    gradcheck(fn, (x,))
    assert torch.autograd.gradcheck(fn, (x,))


def test_gradcheck_catches_a_wrong_backward_like_torch_does():
    class WrongBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t**2

        @staticmethod
        def backward(ctx, grad):
            (t,) = ctx.saved_tensors
            return grad * t  # should be 2 t

    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    with pytest.raises(CheckFailed, match=r"5 of 25 Jacobian entries differ; worst: d out\[\d\] / d input0\[\d\]"):
        gradcheck(WrongBackward.apply, (x,))
    assert not torch.autograd.gradcheck(WrongBackward.apply, (x,), raise_exception=False)


def test_gradcheck_names_a_cut_graph():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(CheckFailed, match="does not depend on the inputs through autograd"):
        gradcheck(lambda t: t.detach() * 2, (x,))


FORBIDDEN = ["torch.softmax", "torch.nn.functional.softmax", "torch.Tensor.softmax", "torch.nn.Softmax"]


@pytest.mark.parametrize(("line", "name"), [
    ("y = torch.softmax(x, 0)", "torch.softmax"),
    ("y = F.softmax(x, 0)", "torch.nn.functional.softmax"),
    ("y = functional.softmax(x, 0)", "torch.nn.functional.softmax"),
    ("y = x.softmax(0)", "torch.Tensor.softmax"),
    ("y = (x + 1).softmax(0)", "torch.Tensor.softmax"),
    ("y = nn.Softmax(dim=0)(x)", "torch.nn.Softmax"),
    ("y = sm(x, 0)", "torch.softmax"),
    ("y = getattr(torch, 'softmax')(x, 0)", "torch.softmax"),
])
def test_scan_resolves_aliases(line, name):
    source = ("import torch\nimport torch.nn.functional as F\nfrom torch import nn\nfrom torch.nn import functional\n"
              f"from torch import softmax as sm\n\ndef f(x):\n    {line}\n    return y\n")
    found = [v for v in scan(source, FORBIDDEN) if v.line == 8]
    assert [v.name for v in found] == [name]
    assert found[0].code == line


def test_scan_ignores_the_students_own_softmax_and_prose():
    source = '"""softmax, explained."""\nimport torch\n\ndef softmax(x):\n    """torch.softmax is forbidden"""\n' \
             '    return x\n\ny = softmax(torch.ones(2))\n'
    assert scan(source, FORBIDDEN) == []


def test_scan_ignores_a_forbidden_name_printed_as_a_label_but_not_one_looked_up():
    """A corpus student's debug line, `print("softmax", ...)`, got the kata 0 as forbidden."""
    source = ('import torch\n\ndef softmax(x, dim=-1):\n    print("softmax", tuple(x.shape), f"{\'softmax\'}")\n'
              '    assert x.dim(), "softmax"\n    name = "softmax"\n    return getattr(torch, name)(x, dim)\n')
    assert [(v.line, v.name) for v in scan(source, FORBIDDEN)] == [(6, "torch.softmax")]
    assert [v.line for v in scan('import torch\nprint(getattr(torch, "softmax"))\n', FORBIDDEN)] == [2]
