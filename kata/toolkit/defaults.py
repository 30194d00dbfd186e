"""Signature defaults: what a caller who leaves an argument out gets is what the contract's signature says.

The checks of a kata pass every argument, so a wrong default (`norm_first=True`, `dropout=0.0`) would keep
full marks. These compare the student's code with itself: once with the argument left out, once with the
contract's value given, all else equal. A module is built both ways from the same seed (the same weights), holds
the same buffers, and runs in train mode (a new module's: dropout active) from the same seed on the same input;
a function is called both ways.
Any difference can only come from the default. All the defaults are left out at once first (one comparison
when they are right), then one at a time to name the one that differs:

    check_module_defaults(lambda **kw: student.EncoderBlock(8, 2, 16, **kw), lambda block: block(x),
                          {"dropout": 0.1, "norm_first": False}, signature="EncoderBlock(d_model, n_heads, d_ff)")

`base` gives the arguments that stay explicit while another is left out (small values for cheap modules: a
`max_len` of 16 while `dropout`'s default is checked).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch

from kata.grading.failure import CheckFailed, Mistake, fail
from kata.toolkit import remote
from kata.toolkit.common import _names
from kata.toolkit.compare import assert_close, describe

WRONG_DEFAULT = Mistake(
    "wrong-default",
    "an argument left out does not take the value the contract's signature gives it: write the contract's "
    "default in the signature (the failure names the argument)")


def _spelled(values: Mapping[str, object]) -> str:
    return ", ".join(f"{name}={value!r}" for name, value in values.items())


def _left_out(construct: Callable[..., object], kwargs: Mapping, values: Mapping[str, object], signature: str):
    """`construct(**kwargs)` (the `values` left out), or what it raised, as a difference to report: the call with
    them given has run (a stub's NotImplementedError and a forbidden call stay the student's)."""
    try:
        return construct(**kwargs)
    except (NotImplementedError, remote.StudentForbidden):
        raise
    except remote.StudentError as exc:
        return (f"{signature} with {', '.join(values)} left out raised {exc.type_name} ({exc}), while "
                f"{_spelled(values)} runs")


def _buffers(module) -> dict[str, tuple[int, ...]]:
    """Every buffer's shape, by name (a buffer left out of the state, persistent=False, too)."""
    return {name: tuple(t.shape) for name, t in module.named_buffers()}


def _seeded(seed: int, run: Callable[[], object]):
    remote.current().seed(seed)  # taken by the next request to the student's process: the call in `run`
    return run()


def _difference(got, want, *, values: Mapping[str, object], signature: str, what: str) -> str | None:
    """How the output with `values` left out (`got`) differs from that with them given (`want`), or None."""
    if not isinstance(want, torch.Tensor):
        return None if got == want else (f"{signature} with {', '.join(values)} left out gives {got!r}, with "
                                          f"{_spelled(values)} {want!r} ({what})")
    try:
        assert_close(got, want, name=f"the output with {', '.join(values)} left out",
                     what=f"the output with {_spelled(values)}", context=f"{signature}, {what}")
    except CheckFailed as failed:
        return str(failed)
    return None


def _module_difference(construct, run, base: Mapping, values: Mapping[str, object], signature: str) -> str | None:
    # Both built from one seed: the same weights where the structure is the same (cheaper than moving a state).
    seed = int(torch.randint(2**31 - 1, ()))
    given = _seeded(seed, lambda: construct(**{**base, **values}))
    left = _seeded(seed, lambda: _left_out(construct, {k: v for k, v in base.items() if k not in values}, values,
                                           signature))
    if isinstance(left, str):
        return left
    mine, want = _buffers(left), _buffers(given)
    if mine != want:  # max_len: the positions' table
        differ = [f"{k} {mine.get(k, 'absent')} instead of {want.get(k, 'absent')}"
                  for k in sorted(mine.keys() | want.keys()) if mine.get(k) != want.get(k)]
        return (f"{signature} with {', '.join(values)} left out holds other buffers than with {_spelled(values)}: "
                + "; ".join(differ[:4]))
    mode = "in train mode"
    want = _seeded(seed, lambda: run(given))
    got = _seeded(seed, lambda: run(left))
    if (isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor) and got.shape == want.shape
            and not torch.equal(got, want) and not torch.equal(_seeded(seed, lambda: run(given)), want)):
        # Not reproducible from torch's seed (randomness of its own): only eval mode can compare them.
        given.eval()
        left.eval()
        want, got, mode = run(given), run(left), "in eval mode"
    return _difference(got, want, values=values, signature=signature, what=f"{mode}, {describe(want)}")


def _check(difference: Callable[[Mapping, Mapping[str, object]], str | None], defaults: Mapping[str, object],
           base: Mapping) -> None:
    """All `defaults` left out at once (one comparison when all are right), then, if that differs, one at a time,
    the others given (their values in `base`, else the contract's), to name the one that differs.
    `difference(base, values)` compares the call on `base` with `values` left out and with them given."""
    problem = difference(base, defaults)
    if problem is None:
        return
    if len(defaults) > 1:
        for name, value in defaults.items():
            if (single := difference({**defaults, **base}, {name: value})) is not None:
                problem, defaults = single, {name: value}
                break
    kind = "default is" if len(defaults) == 1 else "defaults are"
    fail(f"{problem}\nThe contract's {kind} {_spelled(defaults)}", WRONG_DEFAULT)


@_names(WRONG_DEFAULT)
def check_module_defaults(construct: Callable[..., object], run: Callable[[object], torch.Tensor],
                          defaults: Mapping[str, object], *, signature: str, base: Mapping | None = None) -> None:
    """The module `construct(**base)` with `defaults` (name -> the contract's value) left out holds the buffers of
    `construct(**base, **defaults)`, and built from the same seed, `run(module)` from the same seed gives the same
    output. `construct` makes a new module (in train mode, so dropout acts) with one call into the student's
    process, and so does `run` (a seed is taken by the next request)."""
    _check(lambda kwargs, values: _module_difference(construct, run, kwargs, values, signature), defaults,
           dict(base or {}))


@_names(WRONG_DEFAULT)
def check_function_defaults(call: Callable[..., object], defaults: Mapping[str, object], *, signature: str,
                            base: Mapping | None = None, what: str = "") -> None:
    """`call(**base)` with `defaults` (name -> the contract's value) left out returns what it returns with them
    given (each call from the same seed)."""
    def difference(base: Mapping, values: Mapping[str, object]) -> str | None:
        seed = int(torch.randint(2**31 - 1, ()))
        want = _seeded(seed, lambda: call(**{**base, **values}))
        got = _seeded(seed, lambda: _left_out(call, {k: v for k, v in base.items() if k not in values}, values,
                                              signature))
        if isinstance(got, str) and not isinstance(want, str):
            return got
        return _difference(got, want, values=values, signature=signature, what=what or describe(want))

    _check(difference, defaults, dict(base or {}))
