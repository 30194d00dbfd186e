"""Graders of kata 9.1: softmax.

Hidden from students: they see each check's title and message, never this file.
"""

import pytest
import torch

from kata.toolkit import ErrorPattern, Mistake, assert_close, fail
from kata.toolkit.common import (
    FLOOR_DIVISION_IN_BACKWARD,
    GRAPH_CUT,
    INPLACE_BREAKS_BACKWARD,
    OPERATOR_ERRORS,
    check_gradients_equal,
    check_inputs_unchanged,
    check_output_like,
)
from kata.toolkit.compare import assert_finite, describe, is_close, matching_mistakes, tolerance, unlike
from kata.toolkit.gradients import gradcheck
from kata.toolkit.properties import given, st, tensors

NO_MAX = Mistake("no-max-subtraction",
                 "exp() overflowed: subtract the maximum along `dim` before exponentiating "
                 "(softmax(x) == softmax(x - max(x)), and then every exponent is <= 0)")
WRONG_DIM = Mistake("wrong-dim",
                    "the values are a softmax over another dimension: reduce over the `dim` you were given, "
                    "with keepdim=True")
WRONG_SUM = Mistake("wrong-normaliser",
                    "the exponentials are divided by the wrong sum: divide by their sum along `dim`, kept "
                    "as a size-1 dimension (keepdim=True) so it broadcasts back over that slice")
SUM_WITHOUT_KEEPDIM = Mistake(WRONG_SUM.id, WRONG_SUM.explanation + " (the sum lost its dimension: keepdim=True "
                              "is missing, so it broadcast against the wrong axis)")
GLOBAL_MAX = Mistake("global-max",
                     "the maximum was taken over the whole tensor (x.max()), not along `dim`: a slice whose "
                     "logits all lie far below the global maximum then underflows, exp() gives 0 for every entry "
                     "and 0 / 0 = NaN. Subtract each slice's own maximum, x.amax(dim=dim, keepdim=True)")
MEAN_SHIFT = Mistake("shift-by-mean",
                     "the logits were shifted by their mean, not their maximum: softmax(x - c) equals softmax(x) "
                     "for any c, but only c = max(x) along `dim` makes every exponent <= 0, so exp(x - mean) still "
                     "overflows (or underflows to 0 / 0) for large logits. Subtract x.amax(dim=dim, keepdim=True)")
MAX_WRONG_DIM = Mistake("max-wrong-dim",
                        "the maximum is taken along another dimension than the sum: subtracting a constant "
                        "leaves softmax unchanged only if it is the same for the whole slice along `dim`, so "
                        "take the maximum along `dim` too (keepdim=True)")
NORMALISER_DETACHED = Mistake("normaliser-detached",
                              "the sum of the exponentials was cut from the graph (computed under torch.no_grad(), "
                              "or detached): the output is right, but its gradient misses the sum's part. Compute "
                              "e.sum(dim=dim, keepdim=True) with gradients")
# Localisation (no classic mistake matched): softmax is exponentials, then a division by their sum. Either the
# output is a distribution along `dim` and so the division holds, or it is the softmax times one factor per slice
# and so the exponentials hold. Each says only what is true of the values; neither, and nothing is said.
FAULT_IN_EXPONENTIALS = Mistake(
    "fault-in-exponentials",
    "every slice of yours sums to 1 along `dim`, so the division by the sum holds, but the values are not "
    "proportional to exp(x): the fault is before the division, in what is exponentiated or how")
FAULT_IN_NORMALISATION = Mistake(
    "fault-in-normalisation",
    "your values are the softmax times one factor per slice along `dim` (the exponentials are right), but the "
    "slices do not sum to 1: the fault is in the division by the sum of the exponentials along `dim`")


def localise(out, expected: torch.Tensor, dim: int, rtol: float, atol: float):
    """The `localise` of `assert_close` for one softmax output: which of the two steps is at fault, if either."""
    def find() -> tuple[Mistake, ...]:
        if out.shape != expected.shape or out.dtype != expected.dtype or not torch.isfinite(out).all():
            return ()  # another shape or dtype, NaN or inf: nothing to compare step by step
        sums = out.sum(dim=dim, keepdim=True)
        if is_close(sums, torch.ones_like(sums), rtol=rtol, atol=atol * out.shape[dim]):
            return (FAULT_IN_EXPONENTIALS,)
        if is_close(out, expected * sums, rtol=rtol, atol=atol):
            return (FAULT_IN_NORMALISATION,)
        return ()
    return find


def wrong_dim(other: int) -> Mistake:
    """WRONG_DIM, saying which dimension the student's softmax normalises over (one box for one mistake)."""
    return Mistake(WRONG_DIM.id, f"{WRONG_DIM.explanation} (yours normalises over dim {other})")


ERROR_PATTERNS = [
    ErrorPattern(SUM_WITHOUT_KEEPDIM, message=r"must match the size of tensor",
                 code=r"\.sum\((?!.*keepdim\s*=\s*True)"),
    INPLACE_BREAKS_BACKWARD,
    GRAPH_CUT,
    *OPERATOR_ERRORS,
    FLOOR_DIVISION_IN_BACKWARD,
]

CASES = [  # (shape, dim): every dim of every shape, negative dims too
    ((7,), 0), ((7,), -1),
    ((3, 5), 0), ((3, 5), 1), ((3, 5), -1), ((3, 5), -2),
    ((4, 4), 0), ((4, 4), -1),
    ((2, 3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), 2), ((2, 3, 4), -3),
    ((2, 1, 3, 5), 1), ((2, 1, 3, 5), -1), ((2, 4, 3, 5), -2),
    ((1, 1), -1),
]


def shifted_by(x: torch.Tensor, c: torch.Tensor, dim: int) -> torch.Tensor:
    """exp(x - c) normalised along `dim`: softmax, whatever c, until exp overflows or underflows."""
    e = torch.exp(x - c)
    return e / e.sum(dim=dim, keepdim=True)


def mistakes_for(x: torch.Tensor, dim: int) -> dict:
    """What each classic mistake would output for this input (NaN where that mistake makes NaN)."""
    dim = dim % x.dim()
    shifted = torch.exp(x - x.amax(dim=dim, keepdim=True))
    found = {
        NO_MAX: lambda: torch.exp(x) / torch.exp(x).sum(dim=dim, keepdim=True),
        GLOBAL_MAX: lambda: shifted_by(x, x.amax(), dim),
        MEAN_SHIFT: lambda: shifted_by(x, x.mean(dim=dim, keepdim=True), dim),
        Mistake(MEAN_SHIFT.id, MEAN_SHIFT.explanation + " (yours, the mean of the whole tensor)"):
            lambda: shifted_by(x, x.mean(), dim),
        Mistake(WRONG_SUM.id, WRONG_SUM.explanation + " (yours divides by the sum of all elements)"):
            lambda: shifted / shifted.sum(),
        # keepdim forgotten: the sum broadcasts against the wrong axis (only possible for some shapes).
        SUM_WITHOUT_KEEPDIM: lambda: shifted / shifted.sum(dim=dim),
    }
    for other in range(x.dim()):
        if other != dim and x.shape[other] > 1:
            found[wrong_dim(other)] = lambda other=other: torch.softmax(x, dim=other)
            # One of the two reductions along `other`: the max, or the sum.
            found[Mistake(MAX_WRONG_DIM.id, f"{MAX_WRONG_DIM.explanation} (yours takes it along dim {other})")] = (
                lambda other=other: (e := torch.exp(x - x.amax(dim=other, keepdim=True))) / e.sum(dim=dim,
                                                                                                   keepdim=True))
            found[Mistake(WRONG_SUM.id, f"{WRONG_SUM.explanation} (yours sums along dim {other})")] = (
                lambda other=other: shifted / shifted.sum(dim=other, keepdim=True))
    return found


def conditioned(x: torch.Tensor) -> tuple[float, float]:
    """(rtol, atol) for softmax(x): what any backward-stable algorithm may be off by.

    A float holds x only to about eps * |x|, and a shift of x_i by d changes p_i by the factor
    exp(d - sum_j p_j d_j): a relative error of up to 2 * eps * max|x|. So the relative tolerance grows
    with the logits' magnitude (1e4 in float32: about 2.4e-3) instead of relying on an exactness that
    only max-subtraction has for equal logits (logsumexp-based softmax is as right).
    """
    rtol, atol = tolerance(x.dtype)
    scale = float(x.detach().abs().amax()) if x.numel() else 0.0
    return rtol + 2 * torch.finfo(x.dtype).eps * scale, atol


@pytest.mark.critical
def test_matches_torch_softmax(student, device, dtype):
    """Equal to torch.softmax for every shape and dim"""
    for shape, dim in CASES:
        x = torch.randn(shape, device=device, dtype=dtype) * 3
        out = student.softmax(x, dim=dim)
        rtol, atol = conditioned(x)
        expected = torch.softmax(x, dim=dim)
        assert_close(out, expected, what="torch.softmax", rtol=rtol, atol=atol,
                     context=f"x of shape {tuple(shape)}, dim={dim}", mistakes=unlike(expected, mistakes_for(x, dim),
                                                                                   rtol=rtol, atol=atol),
                     localise=localise(out, expected, dim, rtol, atol))


def test_default_dim_is_last(student, device, dtype):
    """dim defaults to -1"""
    x = torch.randn(3, 4, 5, device=device, dtype=dtype)
    rtol, atol = conditioned(x)
    expected = torch.softmax(x, dim=-1)
    out = student.softmax(x)
    assert_close(out, expected, what="torch.softmax(x, dim=-1)", rtol=rtol, atol=atol,
                 context="softmax(x) called without dim", mistakes=unlike(expected, mistakes_for(x, -1), rtol=rtol,
                                                                         atol=atol),
                 localise=localise(out, expected, -1, rtol, atol))


def test_large_logits_stay_finite(student, device, dtype):
    """Logits of magnitude 1e4 give finite probabilities"""
    x = torch.randn(4, 9, device=device, dtype=dtype) * 1e4
    rtol, atol = conditioned(x)
    for dim in (-1, 0):
        out = student.softmax(x, dim=dim)
        context = f"logits of magnitude 1e4, shape (4, 9), dim={dim}"
        # NaN or inf is named only by the mistake whose output it is: NaN from a sum along the wrong dim is
        # no overflow.
        assert_finite(out, context=context, mistakes=matching_mistakes(out, mistakes_for(x, dim)))
        expected = torch.softmax(x, dim=dim)
        assert_close(out, expected, what="torch.softmax", rtol=rtol, atol=atol, context=context,
                     mistakes=unlike(expected, mistakes_for(x, dim), rtol=rtol, atol=atol),
                     localise=localise(out, expected, dim, rtol, atol))


def test_all_equal_logits_are_uniform(student, device, dtype):
    """Equal logits give a uniform distribution, even when huge"""
    for value in (0.0, 1e4, -1e4):
        x = torch.full((3, 6), value, device=device, dtype=dtype)
        rtol, atol = conditioned(x)
        # Only NO_MAX's NaN is told apart here: equal logits make most other mistakes look alike.
        assert_close(student.softmax(x, dim=-1), torch.full_like(x, 1 / 6), what="1/6 everywhere", rtol=rtol,
                     atol=atol, context=f"every logit equal to {value:g}",
                     mistakes={NO_MAX: torch.full_like(x, torch.nan)})


@pytest.mark.structural
@given(x=tensors(scale=5.0), data=st.data())
def test_shift_invariance(student, x, data):
    """Shift invariance: softmax(x + c) == softmax(x)"""
    dim = data.draw(st.integers(-x.dim(), x.dim() - 1), label="dim")
    c = data.draw(st.floats(-50, 50), label="c")
    assert_close(student.softmax(x + c, dim=dim), student.softmax(x, dim=dim), what="softmax(x)",
                 name="softmax(x + c)", context=f"x {describe(x)}, dim={dim}, c={c:g}", rtol=1e-6, atol=1e-9)


@given(x=tensors(scale=5.0), data=st.data())
def test_is_a_distribution(student, x, data):
    """Outputs are positive and sum to 1 along dim, for any shape"""
    dim = data.draw(st.integers(-x.dim(), x.dim() - 1), label="dim")
    out = student.softmax(x, dim=dim)
    context = f"x {describe(x)}, dim={dim}"
    if not isinstance(out, torch.Tensor) or out.shape != x.shape:
        fail(f"output should have the input's shape {tuple(x.shape)}, got {describe(out)} for {context}")
    if (out < 0).any():
        fail(f"softmax produced negative values for {context}")
    others = [other for other in range(x.dim()) if other != dim % x.dim() and x.shape[other] > 1]
    sums = {wrong_dim(other): lambda other=other: torch.softmax(x, dim=other).sum(dim=dim) for other in others}
    assert_close(out.sum(dim=dim), torch.ones_like(x.sum(dim=dim)), name="sum along dim", what="1",
                 context=context, mistakes=sums)


def test_gradcheck(student):
    """gradcheck passes in float64"""
    for shape, dim in (((3, 4), -1), ((2, 3, 4), 1)):
        x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
        gradcheck(lambda t, dim=dim: student.softmax(t, dim=dim), (x,), context=f"x of shape {shape}, dim={dim}")


def _normaliser_detached(x, dim):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True).detach()


def test_gradients_match_torch(student, device, dtype):
    """Gradients equal torch.softmax's"""
    x = torch.randn(3, 5, 4, device=device, dtype=dtype)
    weights = torch.randn(3, 5, 4, device=device, dtype=dtype)
    for dim in (-1, 1):
        mine, theirs, detached = (x.clone().requires_grad_(True) for _ in range(3))
        (student.softmax(mine, dim=dim) * weights).sum().backward()
        (torch.softmax(theirs, dim=dim) * weights).sum().backward()
        (_normaliser_detached(detached, dim) * weights).sum().backward()
        check_gradients_equal({"x": mine.grad}, {"x": theirs.grad}, what="torch.softmax's gradient",
                              context=f"x {describe(x)}, dim={dim}",
                              mistakes={"x": {NORMALISER_DETACHED: detached.grad}})


@pytest.mark.structural
def test_input_not_modified(student, device):
    """The input is left unchanged"""
    x = torch.randn(4, 6, device=device) * 10
    check_inputs_unchanged(lambda: student.softmax(x, dim=-1), {"the input": x})


@pytest.mark.structural
def test_keeps_dtype_and_device(student, device, dtype):
    """The output keeps the input's dtype and device"""
    x = torch.randn(2, 3, device=device, dtype=dtype)
    check_output_like(student.softmax(x, dim=-1), x, "softmax")


# A correct softmax computing in the input's dtype rounds some exponent as large as the logits (x - max, or the
# log-sum-exp, up to max|x| + log 32), so each probability may be off by a relative eps·max|x|: found on an H200,
# where torch.softmax's own tolerance failed the reference (seed 2, bf16) and the logsumexp alternative (6% off).
# Over 200 seeds (CPU half kernels) the worst of the reference and alternatives was 0.34 of this rtol.
@pytest.mark.dtypes(cpu=(), cuda=(torch.float16, torch.bfloat16))
def test_half_precision_forward(student, device, dtype):
    """Half-precision forward matches softmax computed in float32"""
    x = torch.randn(4, 16, 32, device=device, dtype=dtype) * 8
    rtol = torch.finfo(dtype).eps * (x.abs().amax().item() + 4)
    expected = torch.softmax(x.float(), dim=-1).to(dtype)
    out = student.softmax(x, dim=-1)
    assert_close(out, expected, what="torch.softmax computed in float32", context=f"x {describe(x)}", rtol=rtol,
                 mistakes=unlike(expected, mistakes_for(x, -1), rtol=rtol),
                 localise=localise(out, expected, -1, rtol, tolerance(dtype)[1]))
