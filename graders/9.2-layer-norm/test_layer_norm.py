"""Graders of kata 9.2: layer normalisation.

Hidden from students: they see each check's title and message, never this file.
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from kata.toolkit import ErrorPattern, Mistake, assert_close, fail, remote
from kata.toolkit.common import (
    FLOOR_DIVISION_IN_BACKWARD,
    GRAPH_CUT,
    OPERATOR_ERRORS,
    check_gradients_equal,
    check_inputs_unchanged,
    check_output_like,
    load_state,
)
from kata.toolkit.compare import CheckFailed, describe, is_close, relative_error, unlike
from kata.toolkit.gradients import gradcheck
from kata.toolkit.properties import given, st, tensors

UNBIASED = Mistake("unbiased-variance",
                   "the variance divides by d - 1 (the unbiased estimate, the default of x.var() and x.std()): "
                   "layer norm uses the biased variance, divide by d: ((x - mean)**2).mean(-1, keepdim=True) or "
                   "x.var(-1, unbiased=False, keepdim=True)")
EPS_OUTSIDE = Mistake("eps-outside-root",
                      "eps is added outside the square root, (x - mean) / (std + eps): it belongs inside, "
                      "(x - mean) / sqrt(var + eps)")
EPS_IGNORED = Mistake("eps-ignored",
                      "no eps is added to the variance: the denominator is sqrt(var + eps), with the eps you were "
                      "given; yours divides by sqrt(var) wherever the variance is above eps (eps unused, or used "
                      "only as a lower bound for the variance)")
NO_SQRT = Mistake("no-square-root",
                  "the centred vector is divided by the variance: divide by the standard deviation, "
                  "sqrt(var + eps)")
NOT_CENTRED = Mistake("mean-not-subtracted",
                      "the mean is not subtracted from x before dividing: x_hat = (x - mean) / sqrt(var + eps)")
WRONG_AXIS = Mistake("wrong-axis",
                     "the mean and variance are taken over the wrong dimension(s): layer norm normalises each "
                     "position's feature vector on its own, over the last dimension only (dim=-1, keepdim=True)")
SWAPPED = Mistake("gamma-beta-swapped",
                  "gamma and beta are swapped: gamma (the gain) multiplies the normalised vector and beta (the "
                  "shift) is added: gamma * x_hat + beta")
AFFINE_IGNORED = Mistake("affine-ignored",
                         "gamma and beta are not applied: finish with gamma * x_hat + beta")
NO_KEEPDIM = Mistake("no-keepdim",
                     "a mean or variance lost its reduced dimension (keepdim=True is missing), so it broadcast "
                     "against the wrong axis: use x.mean(dim=-1, keepdim=True)")
ONE_PASS = Mistake("one-pass-variance",
                   "the variance is computed as mean(x**2) - mean(x)**2, which cancels catastrophically when "
                   "the mean is large next to the spread: subtract the mean first, then average the squares")
DETACHED = Mistake("detached-statistics",
                   "the mean or the variance is cut from the autograd graph (.detach(), torch.no_grad(), "
                   ".item()): the forward pass is right but gradients must flow through the statistics too")
WRONG_DEFAULT_EPS = Mistake("wrong-default-eps",
                            "eps defaults to a value other than 1e-5, the contract's (and torch's) default")
MODULE_EPS = Mistake("module-eps-ignored",
                     "LayerNorm(d_model, eps) does not use the eps it was given: keep it in __init__ "
                     "(self.eps = eps) and pass it on in forward")
NOT_PARAMETERS = Mistake("not-parameters",
                         "gamma and beta must be nn.Parameter objects (nn.Parameter(torch.ones(d_model))): a "
                         "plain tensor attribute is neither trained by the optimiser, nor saved in state_dict, nor "
                         "moved by .to()")
MODE_DEPENDENT = Mistake("mode-dependent",
                         "in eval mode your LayerNorm gives another output than in train mode for the same input: "
                         "layer norm uses each position's own mean and variance in both modes and keeps no running "
                         "statistics (that is batch norm)")
# ---- where the fault is, when no classic mistake matched (localisation) ----------------------------------
# The output's only intermediate is x_hat, recovered exactly as (y - beta) / gamma: each position's x_hat is
# (x - mean) / sqrt(var + eps), an affine function a·x + b of that position's x. Fitted per position, it
# gives the student's divisor 1 / a and the value they subtracted, -b / a.
FAULT_IN_SCALE = Mistake("fault-in-scale",
                         "the centring is right but the divisor is not: your x_hat = (y - beta) / gamma is "
                         "(x - mean) / D at each position, with D other than sqrt(var + eps) (var the biased "
                         "variance of that position's features): look at the variance and the division")
FAULT_IN_CENTRING = Mistake("fault-in-centring",
                            "what you subtract from x is not the position's mean: your x_hat = (y - beta) / gamma "
                            "is (x - m) / D at each position with m other than x.mean(-1, keepdim=True) (D is "
                            "what that m gives: sqrt(((x - m)**2).mean(-1) + eps)): look at the centring")
FAULT_IN_AFFINE = Mistake("fault-in-affine",
                          "with gamma = 1 and beta = 0 your output equals F.layer_norm's, so the normalisation is "
                          "right and the fault is where gamma and beta are applied: gamma * x_hat + beta")

ERROR_PATTERNS = [
    ErrorPattern(Mistake(NO_KEEPDIM.id, "shapes do not broadcast: most often a mean or a variance lost its "
                         "reduced dimension (keepdim=True is missing)"),
                 message=r"must match the size of tensor|shape .* doesn't match the broadcast shape"),
    GRAPH_CUT,
    *OPERATOR_ERRORS,
    FLOOR_DIVISION_IN_BACKWARD,
]

# (shape, eps, scale of x). Scales below 1 make eps matter, so the eps mistakes look distinct.
CASES = [
    ((2, 5, 16), 1e-5, 0.05),  # (batch, seq, d_model)
    ((1, 1, 8), 1e-5, 1.0),  # batch 1, sequence length 1
    ((1, 7, 8), 1e-3, 0.3),  # batch 1
    ((4, 1, 8), 1e-5, 2.0),  # sequence length 1
    ((6,), 1e-5, 1.0),  # a single vector
    ((5, 5), 1e-2, 1.0),  # square: a mean without keepdim broadcasts silently
    ((3, 6), 0.1, 1.0),
    ((2, 3, 4, 12), 1e-5, 0.5),  # extra leading dimensions
]


def torch_ln(x, gamma, beta, eps=1e-5):
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)


def affine(d, device="cpu", dtype=torch.float64):
    """A gain around 1 and a shift around 0 that are far from ones and zeros, and from each other."""
    gamma = 1.0 + 0.5 * torch.randn(d, device=device, dtype=dtype)
    beta = 0.5 * torch.randn(d, device=device, dtype=dtype)
    return gamma, beta


def inputs(shape, device, dtype, scale=1.0):
    return (torch.randn(shape, device=device, dtype=dtype) * scale + 0.3 * scale).contiguous()


def _normalise(x, gamma, beta, eps, dims, unbiased=False):
    mean = x.mean(dim=dims, keepdim=True)
    var = x.var(dim=dims, keepdim=True, unbiased=unbiased)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


def mistakes_for(x, gamma, beta, eps, *, rtol=None, atol=None) -> dict:
    """What each classic mistake would output for this input, where that differs from the right output
    (within the check's `rtol` and `atol`): with one feature, or where keepdim does not matter, a model can
    give F.layer_norm's output, and an output that differs from it (statistics rounded to float32 in a
    float64 input, say) is no sign of that mistake."""
    mean = x.mean(dim=-1, keepdim=True)
    centred = x - mean
    var = centred.pow(2).mean(dim=-1, keepdim=True)
    unbiased = x.var(dim=-1, keepdim=True, unbiased=True)
    x_hat = centred / torch.sqrt(var + eps)
    found = {
        NO_SQRT: lambda: gamma * centred / (var + eps) + beta,
        NOT_CENTRED: lambda: gamma * x / torch.sqrt(var + eps) + beta,
        SWAPPED: lambda: beta * x_hat + gamma,
        AFFINE_IGNORED: lambda: x_hat,
        NO_KEEPDIM: lambda: gamma * (x - x.mean(dim=-1)) / torch.sqrt(
            (x - x.mean(dim=-1)).pow(2).mean(dim=-1) + eps) + beta,
    }
    # With one feature the unbiased variance is 0 / 0 and eps-ignored divides 0 by 0: both give NaN, so a
    # NaN there tells them apart from nothing. Each is offered only where its output is defined.
    if x.shape[-1] > 1:
        found[UNBIASED] = lambda: gamma * centred / torch.sqrt(unbiased + eps) + beta
    # Where eps is negligible next to every variance, the eps mistakes are within tolerance of the right
    # answer and of each other: offer them only where some position's variance lets eps show.
    if eps > 1e-3 * float(var.min()):
        found[EPS_OUTSIDE] = lambda: gamma * centred / (var.sqrt() + eps) + beta
        if float(var.min()) > 0:
            found[EPS_IGNORED] = lambda: gamma * centred / var.sqrt() + beta
        if x.shape[-1] > 1:  # the Annotated Transformer's LayerNorm: unbiased std, eps outside the root
            both = gamma * centred / (unbiased.sqrt() + eps) + beta
            found[Mistake(UNBIASED.id, UNBIASED.explanation + " (and eps is outside the square root too)")] = both
            found[Mistake(EPS_OUTSIDE.id, EPS_OUTSIDE.explanation + " (and the variance is unbiased too: divide "
                          "by d)")] = both
    for dim in range(x.dim() - 1):
        if x.shape[dim] > 1:
            found[Mistake(WRONG_AXIS.id, f"{WRONG_AXIS.explanation} (yours normalises over dim {dim})")] = (
                lambda dim=dim: _normalise(x, gamma, beta, eps, (dim,)))
    if x.dim() >= 2:
        found[Mistake(WRONG_AXIS.id, f"{WRONG_AXIS.explanation} (yours normalises over all elements at once)")] = (
            lambda: _normalise(x, gamma, beta, eps, tuple(range(x.dim()))))
    if x.dim() >= 3:
        found[Mistake(WRONG_AXIS.id, f"{WRONG_AXIS.explanation} (yours normalises each batch element over its "
                      "sequence and features together)")] = (
            lambda: _normalise(x, gamma, beta, eps, tuple(range(1, x.dim()))))
    return unlike(torch_ln(x, gamma, beta, eps), found, rtol=rtol, atol=atol)


def _row(values, i):
    return f"{float(values[i]):.4g}"


def normalisation_at_fault(out, x, gamma, beta, eps, again) -> tuple[Mistake, ...]:
    """The step at fault in an output no classic mistake matched, on evidence only (see FAULT_IN_SCALE).

    `again(gamma, beta)` is the student's output for the same x and eps with other gamma and beta. Nothing is
    said where the evidence is weak: fewer than 4 features with gamma away from 0 (a line fits any 2 or 3
    points; dividing by a gamma near 0 loses x_hat), a non-finite output, an x_hat no line fits while the
    output with gamma = 1 and beta = 0 is wrong too."""
    # An output off by rounding only (statistics in a lower precision) is no step's formula at fault.
    if not isinstance(out, torch.Tensor) or out.shape != x.shape or relative_error(
            out, torch_ln(x, gamma, beta, eps)) < 1e-3:
        return ()
    d = x.shape[-1]
    rows = x.detach().cpu().double().reshape(-1, d)
    mean = rows.mean(dim=-1)
    spread = torch.sqrt((rows - mean[:, None]).pow(2).mean(dim=-1) + eps)  # sqrt(var + eps) per position
    g, b = gamma.detach().cpu().double(), beta.detach().cpu().double()
    kept = g.abs() > 0.1  # the features whose x_hat the division by gamma recovers well
    if int(kept.sum()) >= 4 and bool(torch.isfinite(out).all()):
        x_hat = ((out.detach().cpu().double() - b) / g).reshape(-1, d)[:, kept]
        seen = rows[:, kept]
        centred = seen - seen.mean(dim=-1, keepdim=True)
        slope = (centred * x_hat).sum(dim=-1) / centred.pow(2).sum(dim=-1)  # least squares a, per position
        offset = x_hat.mean(dim=-1) - slope * seen.mean(dim=-1)
        residual = (x_hat - slope[:, None] * seen - offset[:, None]).abs().amax(dim=-1)
        if bool((residual <= 1e-4 * x_hat.abs().amax(dim=-1)).all()) and bool((slope != 0).all()):
            divisor, subtracted = 1 / slope, -offset / slope
            scale_right = torch.isclose(divisor, spread, rtol=1e-3, atol=0)
            centre_right = (subtracted - mean).abs() <= 1e-3 * spread
            own = torch.sqrt((rows - subtracted[:, None]).pow(2).mean(dim=-1) + eps)  # D from their own centring
            if bool(centre_right.all()) and not bool(scale_right.all()):
                i = int((~scale_right).nonzero()[0])
                return (Mistake(FAULT_IN_SCALE.id, f"{FAULT_IN_SCALE.explanation} (position {i}: yours divides "
                                f"by {_row(divisor, i)}, sqrt(var + eps) is {_row(spread, i)})"),)
            if not bool(centre_right.all()) and (bool(scale_right.all())
                                                 or bool(torch.isclose(divisor, own, rtol=1e-3, atol=0).all())):
                i = int((~centre_right).nonzero()[0])
                return (Mistake(FAULT_IN_CENTRING.id, f"{FAULT_IN_CENTRING.explanation} (position {i}: yours "
                                f"subtracts {_row(subtracted, i)}, its mean is {_row(mean, i)})"),)
    ones, zeros = torch.ones_like(gamma), torch.zeros_like(beta)
    plain = again(ones, zeros)
    return (FAULT_IN_AFFINE,) if is_close(plain, torch_ln(x, ones, zeros, eps)) else ()


def call_layer_norm(student, x, gamma, beta, **kwargs):
    out = student.layer_norm(x, gamma, beta, **kwargs)
    if not isinstance(out, torch.Tensor):
        fail(f"layer_norm should return a tensor, got {remote.type_name(out)}")
    return out


def at_fault(student, out, x, gamma, beta, eps):
    """The localisation of layer_norm(x, gamma, beta, eps=eps)'s output `out` (for assert_close)."""
    return lambda: normalisation_at_fault(out, x, gamma, beta, eps,
                                          lambda g, b: call_layer_norm(student, x, g, b, eps=eps))


def make_module(student, d, device="cpu", dtype=torch.float32, eps=None, gamma=None, beta=None):
    """The student's LayerNorm(d[, eps=eps]) with `gamma` and `beta` loaded, on `device` in `dtype`."""
    module = student.LayerNorm(d) if eps is None else student.LayerNorm(d, eps=eps)
    if not remote.is_a(module, "Module"):
        fail(f"LayerNorm(d_model) should build an nn.Module, got {remote.type_name(module)}")
    if gamma is not None:
        def mismatch(exc):
            plain = any(isinstance(getattr(module, n, None), torch.Tensor) and not isinstance(
                getattr(module, n), nn.Parameter) for n in ("gamma", "beta"))
            fail(f"could not load nn.LayerNorm's weight and bias as LayerNorm({d})'s `gamma` and `beta` "
                 f"(parameters of shape ({d},)): {exc}", *((NOT_PARAMETERS,) if plain else ()))
        load_state(module, {"gamma": gamma, "beta": beta}, mismatch)
    return module.to(device=device, dtype=dtype)


@pytest.mark.critical
def test_matches_torch_layer_norm(student, device, dtype):
    """layer_norm equals F.layer_norm for many shapes and eps"""
    for shape, eps, scale in CASES:
        x = inputs(shape, device, dtype, scale)
        gamma, beta = affine(shape[-1], device, dtype)
        out = call_layer_norm(student, x, gamma, beta, eps=eps)
        assert_close(out, torch_ln(x, gamma, beta, eps), what="F.layer_norm",
                     context=f"x {describe(x)} (std {scale:g}), random gamma and beta, eps={eps:g}",
                     mistakes=mistakes_for(x, gamma, beta, eps), localise=at_fault(student, out, x, gamma, beta, eps))


@pytest.mark.weight(2)
def test_biased_variance_eps_inside_root(student, device, dtype):
    """Biased variance, eps inside the square root (a large eps, low-variance inputs)"""
    # Where eps is comparable to the variance, and d is small, the usual mistakes are several percent off.
    for shape, eps, scale in (((3, 5, 4), 0.1, 1.0), ((3, 5, 4), 1e-5, 0.01), ((2, 6), 1e-5, 0.003),
                              ((2, 3, 8), 0.5, 0.5)):
        x = inputs(shape, device, dtype, scale)
        gamma, beta = affine(shape[-1], device, dtype)
        out = call_layer_norm(student, x, gamma, beta, eps=eps)
        assert_close(out, torch_ln(x, gamma, beta, eps), what="F.layer_norm",
                     context=f"x {describe(x)} with variance about {scale**2:g}, eps={eps:g}",
                     mistakes=mistakes_for(x, gamma, beta, eps), localise=at_fault(student, out, x, gamma, beta, eps))


def test_default_eps(student, device, dtype):
    """eps defaults to 1e-5 (function and module)"""
    d = 8
    x = inputs((3, 4, d), device, dtype, 0.01)  # variance 1e-4: eps 1e-5 changes the output by 5%
    gamma, beta = affine(d, device, dtype)
    expected = torch_ln(x, gamma, beta, 1e-5)
    wrong = {Mistake(WRONG_DEFAULT_EPS.id, f"{WRONG_DEFAULT_EPS.explanation} (yours behaves like eps={e:g})"):
             (lambda e=e: torch_ln(x, gamma, beta, e)) for e in (1e-6, 1e-12, 1e-8, 1e-3, 0.0)}
    context = "x of variance 1e-4, eps not given"
    # The default is at fault only where eps=1e-5 given explicitly is right: code that ignores eps behaves
    # like eps=0 either way, and the eps mistakes name it.
    defaults = wrong if is_close(call_layer_norm(student, x, gamma, beta, eps=1e-5), expected) else {}
    out = call_layer_norm(student, x, gamma, beta)
    assert_close(out, expected, name="layer_norm(x, gamma, beta)", what="F.layer_norm with eps=1e-5",
                 context=context, mistakes={**defaults, **mistakes_for(x, gamma, beta, 1e-5)},
                 localise=lambda: normalisation_at_fault(out, x, gamma, beta, 1e-5, lambda g, b: call_layer_norm(
                     student, x, g, b)))
    given = make_module(student, d, device, dtype, eps=1e-5, gamma=gamma, beta=beta)
    defaults = wrong if is_close(given(x), expected) else {}
    module = make_module(student, d, device, dtype, gamma=gamma, beta=beta)
    out = module(x)
    assert_close(out, expected, name=f"LayerNorm({d})(x)", what="nn.LayerNorm with eps=1e-5",
                 context=context, mistakes={**defaults, **mistakes_for(x, gamma, beta, 1e-5)},
                 localise=lambda: normalisation_at_fault(out, x, gamma, beta, 1e-5, lambda g, b: make_module(
                     student, d, device, dtype, gamma=g, beta=b)(x)))


@pytest.mark.critical
def test_matches_nn_layer_norm(student, device, dtype):
    """LayerNorm equals nn.LayerNorm with its weights loaded"""
    for shape, eps, scale in (((2, 5, 16), 1e-5, 0.05), ((1, 1, 8), 1e-5, 1.0), ((3, 4, 6), 0.1, 0.3),
                              ((2, 7), 1e-3, 1.0)):
        d = shape[-1]
        ref = nn.LayerNorm(d, eps=eps).to(device=device, dtype=dtype)
        with torch.no_grad():
            ref.weight.copy_(1.0 + 0.5 * torch.randn(d))
            ref.bias.copy_(0.5 * torch.randn(d))
        module = make_module(student, d, device, dtype, eps=eps, gamma=ref.weight.detach(), beta=ref.bias.detach())
        x = inputs(shape, device, dtype, scale)
        gamma, beta = ref.weight.detach(), ref.bias.detach()
        found = mistakes_for(x, gamma, beta, eps)
        if eps != 1e-5:
            found[MODULE_EPS] = lambda gamma=gamma, beta=beta, x=x: torch_ln(x, gamma, beta, 1e-5)
        out = module(x)
        assert_close(out, ref(x), name=f"LayerNorm({d}, eps={eps:g})(x)", what="nn.LayerNorm",
                     context=f"x {describe(x)}, nn.LayerNorm's random weight and bias loaded as gamma and beta",
                     mistakes=found, localise=lambda d=d, eps=eps, x=x, out=out, gamma=gamma, beta=beta: (
                         normalisation_at_fault(out, x, gamma, beta, eps, lambda g, b: make_module(
                             student, d, device, dtype, eps=eps, gamma=g, beta=b)(x))))


@pytest.mark.critical  # a model is evaluated in eval mode: a norm that changes there breaks every prediction
def test_eval_mode_computes_as_train_mode(student, device):
    """In eval() mode LayerNorm computes what it computes in train() mode: each position's own statistics"""
    gamma, beta = affine(8, device)
    module = make_module(student, 8, device, torch.float64, gamma=gamma, beta=beta)
    x = inputs((3, 4, 8), device, torch.float64, 2.0) + 5.0  # far from a zero mean and unit variance
    trained = module(x)  # a training call first, as training makes before any evaluation
    evaluated = module.eval()(x)
    if not (isinstance(trained, torch.Tensor) and isinstance(evaluated, torch.Tensor)):
        return  # not a tensor: the checks of the output say so
    if not is_close(evaluated, trained):
        fail(f"LayerNorm(8) with random gamma and beta, called on x {describe(x)} in train mode and then in eval "
             "mode, gave two different outputs", MODE_DEPENDENT)


def test_parameters(student):
    """Parameters gamma (ones) and beta (zeros) of shape (d_model,), trainable"""
    d = 12
    module = make_module(student, d)
    params = dict(module.named_parameters())
    if set(params) != {"gamma", "beta"}:
        plain = [n for n in ("gamma", "beta") if isinstance(getattr(module, n, None), torch.Tensor)
                 and n not in params]
        hint = (f" ({', '.join(plain)} {'is a plain tensor' if len(plain) == 1 else 'are plain tensors'}: wrap "
                "in nn.Parameter so the optimiser trains it and state_dict saves it)") if plain else ""
        fail(f"LayerNorm({d}) should have exactly two parameters, `gamma` and `beta`; "
             f"its parameters are {sorted(params) or 'none'}{hint}", *((NOT_PARAMETERS,) if plain else ()))
    for name in ("gamma", "beta"):
        p = params[name]
        if p.shape != (d,):
            fail(f"LayerNorm({d}).{name} should have shape ({d},), got {tuple(p.shape)}")
        if not p.requires_grad:
            fail(f"LayerNorm({d}).{name} has requires_grad=False: it must be trainable")
        if p.dtype != torch.float32:
            fail(f"LayerNorm({d}).{name} should be float32 (torch's default dtype), got {p.dtype}")
    swapped_init = Mistake(SWAPPED.id, "gamma and beta are initialised the wrong way round: gamma starts at "
                                       "ones (the gain), beta at zeros (the shift)")
    # Swapped only where both are: a beta that starts at ones beside a gamma at ones is a wrong beta, not a swap.
    swapped = all(is_close(params[name].detach(), torch.full((d,), 1.0 - value))
                  for name, value in (("gamma", 1.0), ("beta", 0.0)))
    for name, value in (("gamma", 1.0), ("beta", 0.0)):
        assert_close(params[name].detach(), torch.full((d,), value), name=f"LayerNorm({d}).{name} at initialisation",
                     what=f"{'ones' if value else 'zeros'}",
                     mistakes={swapped_init: torch.full((d,), 1.0 - value)} if swapped else None)
    # The parameters alone: how forward uses them is the business of the checks against nn.LayerNorm, so a
    # wrong variance never shows up here as a parameter problem.


def test_gradcheck(student):
    """gradcheck passes in float64 (x, gamma and beta)"""
    for shape, eps in (((2, 2, 4), 1e-5), ((5,), 0.1)):
        x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
        gamma, beta = (t.requires_grad_(True) for t in affine(shape[-1]))
        gradcheck(lambda x, g, b, eps=eps: student.layer_norm(x, g, b, eps=eps), (x, gamma, beta),
                  context=f"x of shape {shape}, eps={eps:g}")


def _detached_stats(x, gamma, beta, eps):
    mean = x.mean(dim=-1, keepdim=True).detach()
    var = (x - mean).pow(2).mean(dim=-1, keepdim=True).detach()
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


def test_gradients_match_torch(student, device, dtype):
    """Gradients (x, gamma, beta) equal F.layer_norm's"""
    shape, eps = (3, 4, 8), 1e-3
    x = inputs(shape, device, dtype, 0.3)
    gamma, beta = affine(shape[-1], device, dtype)
    weights = torch.randn(shape, device=device, dtype=dtype)

    def grads(fn):
        leaves = [t.clone().requires_grad_(True) for t in (x, gamma, beta)]
        out = fn(*leaves, eps)
        if isinstance(out, torch.Tensor) and out.requires_grad:
            (out * weights).sum().backward()
        return out, leaves

    out, mine = grads(lambda *a: call_layer_norm(student, *a[:3], eps=a[3]))
    expected, theirs = grads(torch_ln)
    _, detached = grads(_detached_stats)
    # Gradients cannot match while the output itself differs: say so first, with the forward's diagnosis.
    assert_close(out.detach(), expected.detach(), name="the output (before any gradient)", what="F.layer_norm",
                 context=f"x {describe(x)}", mistakes=mistakes_for(x, gamma, beta, eps),
                 localise=at_fault(student, out.detach(), x, gamma, beta, eps))
    names = ("x", "gamma", "beta")
    check_gradients_equal({n: m.grad for n, m in zip(names, mine, strict=True)},
                          {n: t.grad for n, t in zip(names, theirs, strict=True)}, what="F.layer_norm's gradient",
                          context=f"x {describe(x)}, loss (out * w).sum()",
                          mistakes={n: {DETACHED: d.grad} for n, d in zip(names, detached, strict=True)})
    # The module's parameters receive the same gradients as nn.LayerNorm's weight and bias.
    ref = nn.LayerNorm(shape[-1], eps=eps).to(device=device, dtype=dtype)
    with torch.no_grad():
        ref.weight.copy_(gamma)
        ref.bias.copy_(beta)
    module = make_module(student, shape[-1], device, dtype, eps=eps, gamma=gamma, beta=beta)
    (module(x) * weights).sum().backward()
    (ref(x) * weights).sum().backward()
    params = dict(module.named_parameters())
    check_gradients_equal({f"LayerNorm.{n}": params[n].grad for n in ("gamma", "beta")},
                          {"LayerNorm.gamma": ref.weight.grad, "LayerNorm.beta": ref.bias.grad},
                          what="nn.LayerNorm's gradient (of weight, of bias)",
                          context=f"x {describe(x)}, loss (out * w).sum()")


@given(x=tensors(min_dims=1, max_dims=4, max_side=6), data=st.data())
def test_any_shape(student, x, data):
    """Any shape, batch 1 and sequence length 1 included: equals F.layer_norm"""
    eps = data.draw(st.sampled_from([0.5, 1e-2, 1e-5]), label="eps")  # shrinks to 0.5: eps mistakes show
    gamma, beta = affine(x.shape[-1])
    out = call_layer_norm(student, x, gamma, beta, eps=eps)
    assert_close(out, torch_ln(x, gamma, beta, eps), what="F.layer_norm", context=f"x {describe(x)}, eps={eps:g}",
                 mistakes=mistakes_for(x, gamma, beta, eps), localise=at_fault(student, out, x, gamma, beta, eps))


@given(x=tensors(min_dims=1, max_dims=3, min_side=2, max_side=8), data=st.data())
def test_normalised_statistics(student, x, data):
    """With gamma = 1 and beta = 0 each position has mean 0 and variance var / (var + eps)"""
    eps = data.draw(st.sampled_from([0.5, 1e-2, 1e-5]), label="eps")
    d = x.shape[-1]
    out = call_layer_norm(student, x, torch.ones(d, dtype=x.dtype), torch.zeros(d, dtype=x.dtype), eps=eps)
    if out.shape != x.shape:
        fail(f"output should have the input's shape {tuple(x.shape)}, got {tuple(out.shape)}")
    var = x.var(dim=-1, unbiased=False)
    context = f"x {describe(x)}, eps={eps:g}"
    assert_close(out.mean(dim=-1), torch.zeros_like(var), name="the mean of each position's output", what="0",
                 context=context, atol=1e-10, mistakes={NOT_CENTRED: x.mean(dim=-1) / torch.sqrt(var + eps)})
    unbiased = x.var(dim=-1, unbiased=True)
    assert_close(out.var(dim=-1, unbiased=False), var / (var + eps), name="the (biased) variance of each "
                 "position's output", what="var / (var + eps)", context=context,
                 mistakes={UNBIASED: var / (unbiased + eps), EPS_OUTSIDE: var / (var.sqrt() + eps) ** 2,
                           EPS_IGNORED: torch.ones_like(var), NO_SQRT: var / (var + eps) ** 2})


@given(x=tensors(min_dims=1, max_dims=3, max_side=8), data=st.data())
def test_scale_and_shift_invariance(student, x, data):
    """Scale and shift invariance: LN(c·x + s) with eps·c² equals LN(x)"""
    # Exact algebra: the mean shifts by s and scales by c, the variance scales by c², so scaling eps by c²
    # as well leaves (x - mean) / sqrt(var + eps) unchanged.
    c = data.draw(st.floats(0.01, 100.0), label="c")
    s = data.draw(st.floats(-100.0, 100.0), label="s")
    eps = 1e-3
    gamma, beta = affine(x.shape[-1])
    moved = call_layer_norm(student, c * x + s, gamma, beta, eps=eps * c * c)
    centred = x - x.mean(dim=-1, keepdim=True)
    std = centred.pow(2).mean(dim=-1, keepdim=True).sqrt()
    assert_close(moved, call_layer_norm(student, x, gamma, beta, eps=eps), name="layer_norm(c·x + s, eps·c²)",
                 what="layer_norm(x, eps)", context=f"x {describe(x)}, c={c:g}, s={s:g}, eps={eps:g}",
                 # With eps outside the root, c·(x - mean) / (c·std + c²·eps) keeps a factor c on eps.
                 mistakes=unlike(torch_ln(x, gamma, beta, eps),
                                 {EPS_OUTSIDE: lambda: gamma * centred / (std + c * eps) + beta}))


def test_positions_independent(student, device, dtype):
    """Each position is normalised on its own (no statistics across the batch or the sequence)"""
    shape = (3, 5, 8)
    x = inputs(shape, device, dtype)
    gamma, beta = affine(shape[-1], device, dtype)
    out = call_layer_norm(student, x, gamma, beta)
    changed = x.clone()
    changed[1, 2] = 5.0 * torch.randn(shape[-1], device=device, dtype=dtype) + 3.0
    out_changed = call_layer_norm(student, changed, gamma, beta)
    keep = torch.ones(shape[:-1], dtype=torch.bool, device=device)
    keep[1, 2] = False
    # Outputs that move when another position changes can only come from statistics across positions.
    assert_close(out_changed[keep], out[keep], name="the outputs at the other positions",
                 what="their values before the change",
                 context=f"x {describe(x)} with only position [1, 2] changed", mistakes={WRONG_AXIS: out_changed[keep]})
    for b in range(shape[0]):
        alone = call_layer_norm(student, x[b:b + 1], gamma, beta)
        assert_close(alone, out[b:b + 1], name=f"layer_norm(x[{b}:{b + 1}])", what=f"layer_norm(x)[{b}:{b + 1}]",
                     context=f"x {describe(x)}: one batch element alone or in the batch",
                     mistakes={WRONG_AXIS: alone})


def test_large_mean_small_spread(student, device):
    """Inputs far from zero (mean 1000, std 1) stay accurate in float32"""
    d = 32
    x = torch.randn(4, 6, d, device=device) + 1000.0
    gamma, beta = affine(d, device, torch.float32)
    out = call_layer_norm(student, x, gamma, beta)
    truth = torch_ln(x.double(), gamma.double(), beta.double()).float()
    one_pass = x.pow(2).mean(dim=-1, keepdim=True) - x.mean(dim=-1, keepdim=True) ** 2
    # A float32 value near 1000 is known to 6e-5; subtracting a float32 mean costs a few of those
    # (F.layer_norm itself is up to 3e-4 off here). mean(x**2) - mean(x)**2 is off by 0.1 to 10.
    try:
        assert_close(out, truth, what="layer norm computed in float64",
                     context=f"x {describe(x)} = N(1000, 1) (the tolerance, 1e-3, is a few times what float32 "
                             "holds values near 1000 to: it asks for a variance of the centred values)",
                     rtol=1e-3, atol=1e-3, mistakes={
                         ONE_PASS: gamma * (x - x.mean(dim=-1, keepdim=True)) / torch.sqrt(one_pass + 1e-5) + beta,
                         **mistakes_for(x, gamma, beta, 1e-5, rtol=1e-3, atol=1e-3)})
    except CheckFailed as failure:
        # x - 1000 is exact in float32 and has the same layer norm: right there, wrong here means precision
        # lost to the large mean, the signature of the one-pass variance whatever its rounding order.
        near_zero = call_layer_norm(student, x - 1000.0, gamma, beta)
        found = failure.mistakes
        if ONE_PASS not in found and is_close(near_zero, truth, rtol=1e-3, atol=1e-3):
            found = (*found, ONE_PASS)
        raise CheckFailed(str(failure), found) from None


def test_input_not_modified(student, device):
    """The inputs (x, gamma, beta) are left unchanged"""
    x = inputs((2, 4, 8), device, torch.float32, 2.0)
    gamma, beta = affine(8, device, torch.float32)

    def function_and_module():
        call_layer_norm(student, x, gamma, beta)
        make_module(student, 8, device, gamma=gamma, beta=beta)(x)

    check_inputs_unchanged(function_and_module, {"x": x, "gamma": gamma, "beta": beta})


def test_keeps_dtype_and_device(student, device, dtype):
    """The output keeps the input's dtype and device (function and module)"""
    x = inputs((2, 3, 4), device, dtype)
    gamma, beta = affine(4, device, dtype)
    check_output_like(call_layer_norm(student, x, gamma, beta), x, "layer_norm")
    check_output_like(make_module(student, 4, device, dtype)(x), x, f"LayerNorm(4).to({device}, {dtype})",
                      hint="gamma and beta must be parameters so that .to() moves them")


# Loosened for half precision: a composite layer norm rounds to the dtype after each of its ~5 operations,
# F.layer_norm computes in float32 and rounds once. Measured worst case of textbook composites against
# F.layer_norm: atol 1.6e-3 at rtol 4e-3 in float16, 1.4e-2 at rtol 3.2e-2 in bfloat16.
HALF_TOLERANCE = {torch.float16: (4e-3, 5e-3), torch.bfloat16: (3.2e-2, 4e-2)}


@pytest.mark.dtypes(cpu=(), cuda=(torch.float16, torch.bfloat16))
def test_half_precision_forward(student, device, dtype):
    """Half-precision forward matches F.layer_norm (function and module)"""
    d = 64
    x = inputs((4, 16, d), device, dtype, 2.0)
    gamma, beta = affine(d, device, dtype)
    rtol, atol = HALF_TOLERANCE[dtype]
    expected = torch_ln(x, gamma, beta)
    assert_close(call_layer_norm(student, x, gamma, beta), expected, what="F.layer_norm", context=f"x {describe(x)}",
                 rtol=rtol, atol=atol)
    module = make_module(student, d, device, dtype, gamma=gamma, beta=beta)
    assert_close(module(x), expected, name=f"LayerNorm({d})(x)", what="F.layer_norm", context=f"x {describe(x)}",
                 rtol=rtol, atol=atol)
