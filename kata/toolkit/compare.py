"""Tensor-aware comparisons that say what is wrong, where, and which classic mistake it looks like.

A grader writes::

    assert_close(student.softmax(x, dim), torch.softmax(x, dim), what="torch.softmax",
                 context=f"x {describe(x)}, dim={dim}",
                 mistakes={NO_MAX: lambda: naive_softmax(x, dim)})

and on failure the student reads the shapes, dtypes, devices, how many elements differ, the largest
absolute and relative errors with their index, NaN/Inf counts, and "Looks like: <mistake>" when
their output matches what a planted classic mistake produces.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch

from kata.grading.failure import CheckFailed, ErrorPattern, Mistake, fail
from kata.toolkit import remote

# assert_close's defaults, per dtype, as (rtol, atol).
_TOLERANCES = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1.3e-6, 1e-5),
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
}


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """`torch.testing.assert_close`'s (rtol, atol) for `dtype`."""
    return _TOLERANCES.get(dtype, (0.0, 0.0))


def describe(t) -> str:
    """`(2, 3) float32 cpu` for a tensor, the type name for anything else (where it lives: an object of the
    student's process is named by its type there)."""
    if not isinstance(t, torch.Tensor):
        return remote.type_name(t)
    return f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')} {t.device.type}"


def _index(flat: int, shape: torch.Size) -> str:
    coords = []
    for size in reversed(shape):
        coords.append(flat % size)
        flat //= size
    return "[" + ", ".join(str(c) for c in reversed(coords)) + "]"


def _num(v: float) -> str:
    return f"{v:.6g}"


def _mismatch(actual: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float) -> torch.Tensor:
    """Elementwise "differs", computed in float64 on the CPU; NaN where a number was expected differs."""
    a = actual.detach().to("cpu", torch.float64)
    e = expected.detach().to("cpu", torch.float64)
    both_nan = torch.isnan(a) & torch.isnan(e)
    same_inf = torch.isinf(a) & torch.isinf(e) & (torch.sign(a) == torch.sign(e))
    close = (a - e).abs() <= e.abs() * rtol + atol
    return ~(close | both_nan | same_inf)


def _differs(actual: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float) -> bool:
    return bool(_mismatch(actual, expected, rtol, atol).any())


def is_close(actual, expected, *, rtol: float | None = None, atol: float | None = None) -> bool:
    """Same shape and every element within tolerance (NaN matches NaN)."""
    if not (isinstance(actual, torch.Tensor) and isinstance(expected, torch.Tensor)):
        return False
    if actual.shape != expected.shape:
        return False
    default_rtol, default_atol = tolerance(expected.dtype)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    return not _differs(actual, expected, rtol, atol)


def matching_mistakes(actual, mistakes: Mapping[Mistake, torch.Tensor | Callable[[], torch.Tensor] | tuple],
                      *, rtol: float | None = None, atol: float | None = None) -> tuple[Mistake, ...]:
    """The mistakes whose output `actual` reproduces. A candidate that cannot be computed is skipped; a tuple
    of candidates holds the variants of one mistake (one explanation, one box), which matches if any does."""
    found: list[Mistake] = []
    for mistake, candidates in mistakes.items():
        if any(m.id == mistake.id for m in found):  # variants of one mistake: the first that matches speaks
            continue
        for candidate in candidates if isinstance(candidates, tuple) else (candidates,):
            try:
                value = candidate() if callable(candidate) else candidate
            except Exception:  # a mistake's model that does not apply to this input
                continue
            if is_close(actual, value, rtol=rtol, atol=atol):
                found.append(mistake)
                break
    return tuple(found)


def unlike(expected: torch.Tensor, mistakes: Mapping[Mistake, torch.Tensor | Callable[[], torch.Tensor]], *,
           rtol: float | None = None, atol: float | None = None) -> dict:
    """`mistakes` less those whose model gives `expected` itself on this input (within the tolerance
    `assert_close` matches mistakes with): an output that differs from the truth is no evidence of a model
    that agrees with it (no max subtraction is harmless for small logits). Models still run only on failure."""
    default_rtol, default_atol = tolerance(expected.dtype)
    rtol = max(default_rtol if rtol is None else rtol, 1e-5)
    atol = max(default_atol if atol is None else atol, 1e-6)

    def unless_right(candidate):
        def model():
            value = candidate() if callable(candidate) else candidate
            if is_close(value, expected, rtol=rtol, atol=atol):
                raise ValueError("the mistake's model gives the right answer here")  # skipped by matching_mistakes
            return value
        return model

    return {mistake: unless_right(candidate) for mistake, candidate in mistakes.items()}


def tensor_report(actual: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float) -> list[str]:
    """Lines describing how two tensors of the same shape differ."""
    lines: list[str] = []
    differs = _mismatch(actual, expected, rtol, atol)
    n_diff, n = int(differs.sum()), differs.numel()
    lines.append(f"{n_diff:,} of {n:,} elements differ (rtol {rtol:g}, atol {atol:g})")
    a = actual.detach().to("cpu", torch.float64).reshape(-1)
    e = expected.detach().to("cpu", torch.float64).reshape(-1)
    for label, mask_a, mask_e in (("NaN", torch.isnan(a), torch.isnan(e)), ("Inf", torch.isinf(a), torch.isinf(e))):
        count_a, count_e = int(mask_a.sum()), int(mask_e.sum())
        if count_a != count_e:
            first = _index(int(mask_a.nonzero()[0]), actual.shape) if count_a else ""
            where = f" (first at {first})" if first else ""
            lines.append(f"{label}: {count_a:,} in your output{where}, {count_e:,} expected")
    finite = torch.isfinite(a) & torch.isfinite(e)
    if finite.any():
        abs_err = torch.where(finite, (a - e).abs(), torch.zeros_like(a))
        worst = int(abs_err.argmax())
        if abs_err[worst] > 0:
            lines.append(f"largest absolute error {_num(float(abs_err[worst]))} at {_index(worst, actual.shape)}: "
                         f"got {_num(float(a[worst]))}, expected {_num(float(e[worst]))}")
            rel_err = torch.where(finite & (e != 0), abs_err / e.abs().clamp_min(1e-300), torch.zeros_like(a))
            worst_rel = int(rel_err.argmax())
            if rel_err[worst_rel] > 0:
                # Relative to a non-zero expected value: an error where 0 was expected shows in the line above.
                lines.append(f"largest relative error {_num(float(rel_err[worst_rel]))} at "
                             f"{_index(worst_rel, actual.shape)} (among elements expected to be non-zero)")
            if actual.dim() >= 1 and actual.shape[-1] > 1:
                row = worst // actual.shape[-1]
                width = actual.shape[-1]
                lo = row * width
                take = min(width, 8)
                more = " …" if width > take else ""
                got = ", ".join(_num(float(v)) for v in a[lo:lo + take])
                exp = ", ".join(_num(float(v)) for v in e[lo:lo + take])
                lines.append(f"in that row: got      [{got}{more}]")
                lines.append(f"             expected [{exp}{more}]")
    return lines


def assert_close(
    actual,
    expected: torch.Tensor,
    *,
    name: str = "output",
    what: str = "the reference",
    context: str = "",
    rtol: float | None = None,
    atol: float | None = None,
    mistakes: Mapping[Mistake, torch.Tensor | Callable[[], torch.Tensor] | tuple] | None = None,
    check_dtype: bool = True,
    check_device: bool = True,
    localise: Callable[[], tuple[Mistake, ...]] | None = None,
) -> None:
    """Fail with a tensor-aware message unless `actual` matches `expected` within tolerance.

    Tolerances default to `torch.testing.assert_close`'s for `expected.dtype`. `mistakes` maps each
    classic mistake to the output it would produce (or a function computing it, run only on failure; or a
    tuple of those, its variants). `localise` finds the part at fault (`kata.toolkit.localise`): called only
    when the comparison fails and no classic mistake matched, its diagnoses are the failure's.
    """
    mistakes = mistakes or {}
    default_rtol, default_atol = tolerance(expected.dtype)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    heading = f"{name} differs from {what}" + (f" for {context}" if context else "")

    if not isinstance(actual, torch.Tensor):
        fail(f"{name} should be a torch.Tensor {describe(expected)}, got {remote.type_name(actual)}"
             + (f" for {context}" if context else ""))
    problems: list[str] = []
    if actual.shape != expected.shape:
        problems.append(f"shape: got {tuple(actual.shape)}, expected {tuple(expected.shape)}")
    if check_dtype and actual.dtype is not expected.dtype:
        problems.append(f"dtype: got {actual.dtype}, expected {expected.dtype} (outputs keep the input's dtype)")
    if check_device and actual.device != expected.device:
        problems.append(f"device: got {actual.device}, expected {expected.device} (outputs stay on the input's device)")
    if not problems:
        if not _differs(actual, expected, rtol, atol):
            return
        problems = tensor_report(actual, expected, rtol, atol)
    elif actual.shape == expected.shape and actual.is_floating_point():
        problems.extend(tensor_report(actual, expected.to(actual.device), rtol, atol))
    found = matching_mistakes(actual, mistakes, rtol=max(rtol, 1e-5), atol=max(atol, 1e-6)) if mistakes else ()
    if not found and localise is not None:
        try:
            found = tuple(localise())
        except Exception:  # localisation says nothing rather than fail the grader
            found = ()
    raise CheckFailed("\n".join([heading + ":", *("  " + p for p in problems)]), found)


def assert_finite(actual: torch.Tensor, *, name: str = "output", context: str = "",
                  mistakes: tuple[Mistake, ...] = ()) -> None:
    """Fail, naming `mistakes`, if `actual` holds NaN or Inf."""
    if not isinstance(actual, torch.Tensor):
        fail(f"{name} should be a torch.Tensor, got {remote.type_name(actual)}"
             + (f" for {context}" if context else ""))
    bad = ~torch.isfinite(actual.detach())
    if bad.any():
        first = _index(int(bad.reshape(-1).nonzero()[0]), actual.shape)
        n_nan = int(torch.isnan(actual.detach()).sum())
        n_inf = int(bad.sum()) - n_nan
        fail(f"{name} has {n_nan:,} NaN and {n_inf:,} Inf values (first at {first})"
             + (f" for {context}" if context else ""), *mistakes)


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """max |a - e| / max |e|, in float64: a scale-free size of a difference."""
    a, e = actual.detach().double().cpu(), expected.detach().double().cpu()
    scale = float(e.abs().max()) or 1.0
    return float((a - e).abs().max()) / scale if a.numel() else 0.0


__all__ = [
    "CheckFailed", "ErrorPattern", "Mistake", "assert_close", "assert_finite", "describe", "fail", "is_close",
    "matching_mistakes", "relative_error", "tolerance", "unlike",
]

