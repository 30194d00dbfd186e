"""Graders of kata 9.5: the position-wise feed-forward network.

Hidden from students: they see each check's title and message, never this file.
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from kata.toolkit import Mistake, assert_close, fail, remote
from kata.toolkit.common import (
    DROPOUT_IN_EVAL,
    INPLACE_BREAKS_BACKWARD,
    OPERATOR_ERRORS,
    bias_missing,
    check_follows_the_device,
    check_gradients_equal,
    check_inputs_unchanged,
    check_output_like,
    load_state,
)
from kata.toolkit.compare import describe, is_close
from kata.toolkit.gradients import gradcheck
from kata.toolkit.localise import once_each, recorded
from kata.toolkit.properties import final_example, given, shapes, st, tensors

ACT_MISSING = Mistake("activation-missing",
                      "there is no ReLU between the two linear layers: without a non-linearity they collapse into "
                      "a single linear map. FFN(x) = linear_2(relu(linear_1(x)))")
ACT_MISPLACED = Mistake("activation-misplaced",
                        "the ReLU is in the wrong place: it goes between the two linear layers, on the d_ff hidden "
                        "units, not on the input or the output")
WRONG_ACT = Mistake("wrong-activation",
                    "the activation is not the paper's ReLU, max(0, x): use torch.relu")
DROPOUT_MISSING = Mistake("dropout-missing",
                          "no dropout in training mode: keep nn.Dropout(dropout) from __init__ and apply it to the "
                          "hidden units, after the ReLU")
DROPOUT_MISPLACED = Mistake("dropout-misplaced",
                            "dropout is applied in the wrong place: it acts on the d_ff hidden units after the ReLU, "
                            "before linear_2 (the block's output is dropped out later, by the residual wrapper)")
DROPOUT_SCALE = Mistake("dropout-not-rescaled",
                        "the kept hidden units are not scaled by 1 / (1 - p): without it their expected value shrinks "
                        "in training and the network sees larger activations in eval. nn.Dropout does it for you")
KEEP_PROB = Mistake("dropout-keep-probability",
                    "dropout's p is the probability of zeroing a unit, not of keeping it: nn.Dropout(dropout), "
                    "not nn.Dropout(1 - dropout)")
DEFAULT_DROPOUT = Mistake("wrong-default-dropout",
                          "dropout defaults to 0.0: FeedForward(d_model, d_ff) is deterministic even in train mode")
DROPOUT_MASK_REUSED = Mistake("dropout-mask-reused",
                              "two calls in train mode dropped exactly the same hidden units: dropout draws a new "
                              "random mask on every call (nn.Dropout does); a mask kept between calls drops the same "
                              "units for every batch")
D_FF_IGNORED = Mistake("d-ff-ignored",
                       "the hidden layer must have d_ff units: linear_1 = nn.Linear(d_model, d_ff) and "
                       "linear_2 = nn.Linear(d_ff, d_model)")
ERROR_PATTERNS = [INPLACE_BREAKS_BACKWARD, *OPERATOR_ERRORS]

# ---- where the fault is, when no classic mistake matched: linear_1 and linear_2 traced in one eval forward ----

TRACED = "linear_1 and linear_2, traced in one call of your FeedForward, show where: "
FAULT_IN_INPUT = Mistake("fault-in-ffn-input",
                         TRACED + "linear_1 did not receive x itself. FFN(x) = linear_2(relu(linear_1(x))): nothing "
                         "comes before linear_1")
FAULT_IN_HIDDEN = Mistake("fault-in-hidden-layer",
                          TRACED + "linear_2 did not receive relu of linear_1's output. Between the two layers "
                          "there is only torch.relu (and dropout, which is the identity in eval mode)")
FAULT_IN_OUTPUT = Mistake("fault-in-ffn-output",
                          TRACED + "linear_1 and linear_2 got the right inputs, but the module does not return "
                          "linear_2's output as it is. FeedForward ends with linear_2: a residual or a norm "
                          "belongs to the sub-layer around it (kata 9.6)")


def traced_fault(module, x) -> tuple[Mistake, ...]:
    """The first place where the student's own traced values stop following the formula: linear_1's input
    against x, linear_2's input against relu of linear_1's traced output, the result against linear_2's traced
    output (eval mode: dropout is the identity). Nothing where a layer was not called exactly once through its
    module (F.linear on its weights, say), or where everything follows (the fault is then in the layers'
    weights)."""
    names = ("linear_1", "linear_2")
    with recorded(module, names) as calls:
        out = module(x)
    each = once_each(calls, names)
    if each is None or not all(each[n].args for n in names):
        return ()
    into_1, out_1, into_2, out_2 = (each["linear_1"].args[0], each["linear_1"].output, each["linear_2"].args[0],
                                    each["linear_2"].output)
    if not is_close(into_1, x):
        return (FAULT_IN_INPUT,)
    if not is_close(into_2, torch.relu(out_1)):
        return (FAULT_IN_HIDDEN,)
    return (FAULT_IN_OUTPUT,) if not is_close(out, out_2) else ()


def reference_ffn(d_model, d_ff, dropout=0.0):
    """PyTorch's own layers in the paper's order: Linear, ReLU, Dropout, Linear."""
    return nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))


def weights_of(ref) -> dict:
    return {"linear_1.weight": ref[0].weight.detach(), "linear_1.bias": ref[0].bias.detach(),
            "linear_2.weight": ref[3].weight.detach(), "linear_2.bias": ref[3].bias.detach()}


def build(student, d_model, d_ff, dropout=None):
    """The student's FeedForward(d_model, d_ff[, dropout=dropout]), type-checked."""
    if dropout is None:
        module = student.FeedForward(d_model, d_ff)
    else:
        module = student.FeedForward(d_model, d_ff, dropout=dropout)
    if not remote.is_a(module, "Module"):
        fail(f"FeedForward(d_model, d_ff) should build an nn.Module, got {remote.type_name(module)}")
    return module


def load(module, state: dict, d_model: int, d_ff: int) -> None:
    def mismatch(exc):
        linear_1 = getattr(module, "linear_1", None)
        ignored = remote.is_a(linear_1, "Linear") and linear_1.out_features != d_ff
        held = {name: tuple(t.shape) for name, t in module.state_dict().items()}
        fail(f"could not load torch's weights into FeedForward({d_model}, {d_ff}): it should have "
             f"linear_1 = nn.Linear({d_model}, {d_ff}) and linear_2 = nn.Linear({d_ff}, {d_model}), with biases, "
             f"and no other parameters. torch says: {exc}",
             *((D_FF_IGNORED,) if ignored else bias_missing(held, state)))
    load_state(module, state, mismatch)


def pair(student, d_model, d_ff, device="cpu", dtype=torch.float32, dropout=None):
    """(the student's module, torch's Sequential) with the same weights, on `device` in `dtype`."""
    module = build(student, d_model, d_ff, dropout)
    ref = reference_ffn(d_model, d_ff, 0.0 if dropout is None else dropout)
    load(module, weights_of(ref), d_model, d_ff)
    return module.to(device=device, dtype=dtype), ref.to(device=device, dtype=dtype)


def call(module, x):
    out = module(x)
    if not isinstance(out, torch.Tensor):
        fail(f"FeedForward.forward should return a tensor, got {remote.type_name(out)}")
    return out


def mistakes_for(x, ref, *, default_dropout_in_train=False) -> dict:
    """What each classic mistake would output for this input, with `ref`'s weights."""
    w1, b1, w2, b2 = ref[0].weight, ref[0].bias, ref[3].weight, ref[3].bias
    extra = {}
    if default_dropout_in_train:  # nn.Dropout(1 - 0.0) drops every hidden unit: only b_2 is left
        extra[KEEP_PROB] = lambda: torch.zeros_like(x[..., :1]) + b2

    def ffn(act=torch.relu, before=lambda t: t, after=lambda t: t):
        return after(F.linear(act(F.linear(before(x), w1, b1)), w2, b2))

    identity = lambda t: t  # noqa: E731
    return {
        ACT_MISSING: lambda: ffn(act=identity),
        Mistake(ACT_MISPLACED.id, ACT_MISPLACED.explanation + " (yours applies it to the output of linear_2)"):
            lambda: ffn(act=identity, after=torch.relu),
        Mistake(ACT_MISPLACED.id, ACT_MISPLACED.explanation + " (yours applies it to the input of linear_1)"):
            lambda: ffn(act=identity, before=torch.relu),
        Mistake(ACT_MISPLACED.id, "the block's output goes through a second ReLU: FFN(x) = "
                "linear_2(relu(linear_1(x))) ends with linear_2"): lambda: ffn(after=torch.relu),
        Mistake(WRONG_ACT.id, WRONG_ACT.explanation + " (yours looks like GELU)"): lambda: ffn(act=F.gelu),
        Mistake(WRONG_ACT.id, WRONG_ACT.explanation + " (yours looks like GELU, tanh approximation)"):
            lambda: ffn(act=lambda t: F.gelu(t, approximate="tanh")),
        Mistake(WRONG_ACT.id, WRONG_ACT.explanation + " (yours looks like SiLU)"): lambda: ffn(act=F.silu),
        Mistake(WRONG_ACT.id, WRONG_ACT.explanation + " (yours looks like tanh)"): lambda: ffn(act=torch.tanh),
        Mistake(WRONG_ACT.id, WRONG_ACT.explanation + " (yours looks like a sigmoid)"): lambda: ffn(act=torch.sigmoid),
        Mistake(WRONG_ACT.id, WRONG_ACT.explanation + " (yours looks like leaky ReLU)"): lambda: ffn(act=F.leaky_relu),
        **extra,
    }


def test_layers_and_d_ff(student):
    """linear_1 is nn.Linear(d_model, d_ff), linear_2 is nn.Linear(d_ff, d_model): d_ff respected"""
    d_model, d_ff = 6, 20
    module = build(student, d_model, d_ff)
    for name, n_in, n_out in (("linear_1", d_model, d_ff), ("linear_2", d_ff, d_model)):
        layer = getattr(module, name, None)
        if not remote.is_a(layer, "Linear"):
            fail(f"FeedForward({d_model}, {d_ff}).{name} should be an nn.Linear, got "
                 f"{remote.type_name(layer) if layer is not None else 'no such attribute'}")
        if (layer.in_features, layer.out_features) != (n_in, n_out):
            fail(f"FeedForward({d_model}, {d_ff}).{name} should be nn.Linear({n_in}, {n_out}), got "
                 f"nn.Linear({layer.in_features}, {layer.out_features})", D_FF_IGNORED)
        if layer.bias is None:
            fail(f"FeedForward({d_model}, {d_ff}).{name} has no bias: the paper's FFN has b_1 and b_2 "
                 "(nn.Linear's default bias=True)")
    names = sorted(n for n, _ in module.named_parameters())
    expected = ["linear_1.bias", "linear_1.weight", "linear_2.bias", "linear_2.weight"]
    if names != expected:
        fail(f"FeedForward({d_model}, {d_ff}) should have exactly the parameters {expected}, got {names}")
    if not all(p.requires_grad for p in module.parameters()):
        fail("every parameter of FeedForward must be trainable (requires_grad=True)")


@pytest.mark.critical
def test_matches_torch_layers(student, device, dtype):
    """Equal to Linear -> ReLU -> Linear (torch's layers, same weights) for many shapes"""
    for shape, d_ff in (((2, 5, 8), 32), ((1, 1, 8), 16), ((1, 7, 8), 32), ((4, 1, 8), 8), ((3, 8), 24),
                        ((2, 3, 4, 8), 16)):
        module, ref = pair(student, shape[-1], d_ff, device, dtype)
        module.eval()
        x = torch.randn(shape, device=device, dtype=dtype)
        with torch.no_grad():
            assert_close(call(module, x), ref(x), what="linear_2(relu(linear_1(x)))",
                         context=f"FeedForward({shape[-1]}, {d_ff}), x {describe(x)}", mistakes=mistakes_for(x, ref),
                         localise=lambda module=module, x=x: traced_fault(module, x))


def test_default_dropout_is_zero(student, device, dtype):
    """dropout defaults to 0: deterministic in train mode"""
    module, ref = pair(student, 8, 32, device, dtype)
    module.train()
    x = torch.randn(4, 6, 8, device=device, dtype=dtype)
    first, second = call(module, x), call(module, x)
    if not is_close(first, second):
        fail("FeedForward(8, 32) in train mode gave two different outputs for the same input", DEFAULT_DROPOUT)
    assert_close(first, ref(x), what="linear_2(relu(linear_1(x)))",
                 context=f"FeedForward(8, 32) with the default dropout, in train mode, x {describe(x)}",
                 mistakes=mistakes_for(x, ref, default_dropout_in_train=True))


def _probe_module(student, p, device, dtype):
    """FeedForward(16, 16, p) with linear_2 = identity plus a bias, so that its output minus the bias is the
    hidden layer after dropout; and torch's layers holding the same weights."""
    d = 16
    module = build(student, d, d, dropout=p)
    ref = reference_ffn(d, d)
    with torch.no_grad():
        ref[0].weight.copy_(torch.randn(d, d) / d**0.5)
        ref[0].bias.copy_(0.1 * torch.randn(d))
        ref[3].weight.copy_(torch.eye(d))
        ref[3].bias.copy_(0.5 + torch.rand(d))  # away from 0, so "dropped" and "kept" outputs differ everywhere
    load(module, weights_of(ref), d, d)
    return module.to(device=device, dtype=dtype), ref.to(device=device, dtype=dtype)


def _dropout_probe(student, p, device, dtype):
    """The probe module's output in train mode, relu(linear_1(x)) and linear_2's bias."""
    d = 16
    module, ref = _probe_module(student, p, device, dtype)
    x = torch.randn(8, 32, d, device=device, dtype=dtype)
    with torch.no_grad():
        module.eval()
        first, second = call(module, x), call(module, x)
        if is_close(first, second):  # (dropout in eval mode is the eval check's to report)
            assert_close(first, ref(x), name="the output in eval mode", what="linear_2(relu(linear_1(x)))",
                         context=f"FeedForward({d}, {d}, dropout={p}), x {describe(x)}: the forward pass must be "
                         "right before its dropout can be checked", mistakes=mistakes_for(x, ref))
        module.train()
        out = call(module, x)
    return out, torch.relu(ref[0](x)).detach(), ref[3].bias.detach()


def _share(values: torch.Tensor, candidates: list[torch.Tensor]) -> float:
    """The share of elements equal (within tolerance) to one of the candidates at that element."""
    rtol, atol = (1e-5, 1e-5) if values.dtype == torch.float32 else (1e-9, 1e-9)
    hit = torch.zeros_like(values, dtype=torch.bool)
    for c in candidates:
        hit |= (values - c).abs() <= atol + rtol * c.abs()
    return float(hit.float().mean())


@pytest.mark.weight(2)
def test_dropout_in_training(student, device, dtype):
    """Dropout in training: hidden units zeroed with probability p, survivors scaled by 1 / (1 - p)"""
    p = 0.3
    out, hidden, b2 = _dropout_probe(student, p, device, dtype)
    context = (f"FeedForward(16, 16, dropout={p}) in train mode, with linear_2 set to the identity plus a bias b, "
               "so that output - b is the hidden layer after dropout")
    if out.shape != hidden.shape:
        fail(f"output should have shape {tuple(hidden.shape)}, got {tuple(out.shape)} for {context}")
    dropped = out - b2  # (8, 32, 16): the hidden layer after dropout
    zero = torch.zeros_like(hidden)
    if _share(dropped, [zero, hidden / (1 - p)]) < 1.0:
        # Which pattern do the outputs follow instead?
        missing = _share(dropped, [hidden]) == 1.0
        patterns = [
            (DROPOUT_MISSING, lambda: missing),
            (DROPOUT_SCALE, lambda: not missing and _share(dropped, [zero, hidden]) == 1.0),
            (KEEP_PROB, lambda: _share(dropped, [zero, hidden / p]) == 1.0),
            (Mistake(DROPOUT_MISPLACED.id, DROPOUT_MISPLACED.explanation + " (yours drops the output of linear_2)"),
             lambda: _share(out, [zero, (hidden + b2) / (1 - p)]) == 1.0),
        ]
        found = tuple(m for m, test in patterns if test())
        share = _share(dropped, [zero, hidden / (1 - p)])
        fail(f"only {share:.1%} of the hidden units after dropout are either 0 or relu(linear_1(x)) / (1 - p) "
             f"for {context}: dropout should zero each hidden unit with probability p and scale the others "
             "by 1 / (1 - p)", *found)
    positive = hidden > 0
    n = int(positive.sum())
    share_dropped = float(((dropped.abs() <= 1e-6) & positive).sum()) / n  # a dropped unit leaves exactly b
    # n is about 2000 positive units: the share has a standard deviation of 0.01 around p.
    if abs(share_dropped - p) > 0.06:
        found = (KEEP_PROB,) if abs(share_dropped - (1 - p)) <= 0.06 else ()
        if share_dropped == 0:
            found = (DROPOUT_MISSING,)
        fail(f"{share_dropped:.1%} of the {n} positive hidden units were zeroed for {context}; with dropout={p} "
             f"about {p:.0%} should be", *found)


def test_dropout_draws_a_new_mask_each_call(student, device):
    """Dropout draws a new random mask on every call in train mode"""
    module = build(student, 16, 64, dropout=0.5).to(device)
    x = torch.randn(4, 8, 16, device=device)
    with torch.no_grad():
        module.eval()
        plain = call(module, x)
        module.train()
        first, second = call(module, x), call(module, x)
    if torch.equal(first, second) and not is_close(first, plain):  # dropout acts, but alike twice
        fail("FeedForward(16, 64, dropout=0.5) in train mode gave exactly the same output twice for the same x "
             f"{describe(x)}: each call should drop a new random set of hidden units", DROPOUT_MASK_REUSED)


@pytest.mark.critical  # without gradients through dropout, no model built on it can train
def test_gradients_through_dropout(student, device):
    """In train mode, gradients flow through the hidden units dropout kept, scaled by 1 / (1 - p)"""
    p = 0.3
    module, ref = _probe_module(student, p, device, torch.float64)
    module.train()
    x = torch.randn(8, 4, 16, device=device, dtype=torch.float64)
    w = torch.randn(8, 4, 16, device=device, dtype=torch.float64)
    mine = x.clone().requires_grad_(True)
    out = call(module, mine)
    with torch.no_grad():
        pre = ref[0](x)  # linear_1(x), (8, 4, 16)
        hidden = torch.relu(pre)
        dropped = out.detach() - ref[3].bias  # the hidden layer after the student's dropout
        kept = (dropped - hidden / (1 - p)).abs() <= 1e-9 + 1e-7 * hidden.abs()
        zeroed = dropped.abs() <= 1e-9
    if not (kept | zeroed).all():
        return  # not a dropout of the hidden layer: test_dropout_in_training says what it is
    (out * w).sum().backward()
    scale = torch.where(kept & (pre > 0), 1 / (1 - p), 0.0)  # d dropped / d pre, unit by unit
    expected = (w * scale) @ ref[0].weight.detach()  # (8, 4, 16)
    check_gradients_equal({"x": mine.grad}, {"x": expected}, what="the gradient through the units dropout kept",
                          context=f"FeedForward(16, 16, dropout={p}) in train mode, x {describe(x)}, loss "
                                  "(out * w).sum()")


def test_no_dropout_in_eval(student, device, dtype):
    """No dropout in eval mode: deterministic and equal to torch's layers"""
    module, ref = pair(student, 8, 32, device, dtype, dropout=0.5)
    module.eval()
    ref.eval()
    x = torch.randn(4, 6, 8, device=device, dtype=dtype)
    with torch.no_grad():
        first, second = call(module, x), call(module, x)
        if not is_close(first, second):
            fail("FeedForward(8, 32, dropout=0.5) in eval mode gave two different outputs for the same input",
                 DROPOUT_IN_EVAL)
        assert_close(first, ref(x), what="linear_2(relu(linear_1(x))) without dropout",
                     context=f"FeedForward(8, 32, dropout=0.5) in eval mode, x {describe(x)}",
                     mistakes=mistakes_for(x, ref), localise=lambda: traced_fault(module, x))


@given(data=st.data())
def test_position_wise(student, data):
    """Position-wise: permuting positions permutes outputs; any shape, batch 1 and length 1 included"""
    d_model, d_ff = 8, 16
    batch, seq = data.draw(shapes(min_dims=2, max_dims=2, max_side=6), label="(batch, seq)")
    x = data.draw(tensors(shape=(batch, seq, d_model)), label="x")
    module, ref = pair(student, d_model, d_ff, dtype=torch.float64)
    module.eval()
    perm = data.draw(st.permutations(range(seq)), label="permutation of the positions")
    context = f"x {describe(x)}, positions permuted as {perm}"
    with torch.no_grad():
        out = call(module, x)
        named = final_example()  # the mistakes are looked for in the example reported, not in those tried shrinking
        assert_close(out, ref(x), what="linear_2(relu(linear_1(x)))", context=f"x {describe(x)}",
                     mistakes=mistakes_for(x, ref) if named else None,
                     localise=(lambda: traced_fault(module, x)) if named else None)
        assert_close(call(module, x[:, perm]), out[:, perm], name="FeedForward(x[:, perm])",
                     what="FeedForward(x)[:, perm]", context=context)
        for t in range(seq):
            assert_close(call(module, x[:, t:t + 1]), out[:, t:t + 1], name=f"FeedForward(x[:, {t}:{t + 1}])",
                         what=f"FeedForward(x)[:, {t}:{t + 1}]", context=f"x {describe(x)}: one position alone")


class _WithWeights(torch.autograd.Function):
    """module(x) with the module's parameters passed in beside x, so that gradcheck can perturb them and
    receive their gradients (what torch.func.functional_call does for a module of this process: the
    student's module lives in theirs). Forward loads the weights there and calls the module; backward runs
    the student's backward there and brings back the gradients it leaves in x and in the parameters."""

    @staticmethod
    def forward(ctx, module, names, x, *weights):
        module.load_state_dict(dict(zip(names, (w.detach() for w in weights), strict=True)), strict=False)
        with torch.enable_grad():
            ctx.x = x.detach().requires_grad_(True)
            ctx.out = call(module, ctx.x)
        ctx.module, ctx.names = module, names
        out = ctx.out.detach()
        if not ctx.out.requires_grad:  # cut from the graph there: gradcheck says so
            ctx.mark_non_differentiable(out)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        ctx.module.zero_grad()  # the parameters' gradients accumulate there: one backward's at a time
        with torch.enable_grad():
            (x_grad,) = torch.autograd.grad((ctx.out * grad).sum(), ctx.x, retain_graph=True, allow_unused=True)
        params = dict(ctx.module.named_parameters())
        return None, None, x_grad, *(params[n].grad if n in params else None for n in ctx.names)


def test_gradcheck(student):
    """gradcheck passes in float64 (x and all four weights)"""
    d_model, d_ff = 3, 5
    module = build(student, d_model, d_ff).double()
    names = ("linear_1.weight", "linear_1.bias", "linear_2.weight", "linear_2.bias")
    x = torch.randn(2, 2, d_model, dtype=torch.float64, requires_grad=True)
    params = dict(module.named_parameters())
    missing = [n for n in names if n not in params]
    if missing:
        fail(f"FeedForward({d_model}, {d_ff}) has no parameters {missing}: use nn.Linear layers named "
             "linear_1 and linear_2")
    leaves = [params[n].detach().clone().requires_grad_(True) for n in names]
    gradcheck(lambda x, *weights: _WithWeights.apply(module, names, x, *weights), (x, *leaves),
              context=f"FeedForward({d_model}, {d_ff}), x of shape (2, 2, {d_model})")


def test_gradients_match_torch(student, device, dtype):
    """Gradients (input and weights) equal those of torch's layers"""
    d_model, d_ff = 8, 32
    module, ref = pair(student, d_model, d_ff, device, dtype)
    x = torch.randn(3, 5, d_model, device=device, dtype=dtype)
    weights = torch.randn(3, 5, d_model, device=device, dtype=dtype)
    mine, theirs = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    out = call(module, mine)  # train mode, default dropout 0
    assert_close(out.detach(), ref(x).detach(), name="the output (before any gradient)",
                 what="linear_2(relu(linear_1(x)))", context=f"x {describe(x)}, train mode, default dropout",
                 mistakes=mistakes_for(x, ref, default_dropout_in_train=True))
    (out * weights).sum().backward()
    (ref(theirs) * weights).sum().backward()
    expected = {"x": theirs.grad, "linear_1.weight": ref[0].weight.grad, "linear_1.bias": ref[0].bias.grad,
                "linear_2.weight": ref[3].weight.grad, "linear_2.bias": ref[3].bias.grad}
    got = {"x": mine.grad} | {name: p.grad for name, p in module.named_parameters()}
    check_gradients_equal(got, expected, what="torch's gradient", context=f"x {describe(x)}, loss (out * w).sum()")


def test_input_not_modified(student, device):
    """The input is left unchanged"""
    module, _ = pair(student, 8, 16, device)
    x = torch.randn(2, 5, 8, device=device)
    check_inputs_unchanged(lambda: call(module, x), {"the input": x})


def test_keeps_dtype_and_device(student, device, dtype):
    """The output keeps the input's dtype, device and shape (the module follows .to())"""
    module, _ = pair(student, 8, 16, device, dtype)
    x = torch.randn(2, 3, 8, device=device, dtype=dtype)
    check_output_like(call(module, x), x, f"FeedForward(8, 16).to({device}, {dtype})")


def test_new_tensors_follow_the_input(student):
    """Tensors forward creates are made on the input's device (seen on torch's meta device, on every machine)"""
    module = student.FeedForward(8, 16, dropout=0.5)  # in train mode: the dropout runs too
    check_follows_the_device(lambda: call(module.to("meta"), torch.empty(2, 3, 8, device="meta")),
                             "FeedForward(8, 16, dropout=0.5).to('meta') on x (2, 3, 8) on the meta device")


# Loosened for half precision: near-zero outputs are sums of d_ff products whose rounding error is set by
# the size of the terms, not of the sum, and matmul kernels may accumulate in a different order.
HALF_TOLERANCE = {torch.float16: (1e-3, 1e-3), torch.bfloat16: (1.6e-2, 1e-2)}


@pytest.mark.dtypes(cpu=(), cuda=(torch.float16, torch.bfloat16))
def test_half_precision_forward(student, device, dtype):
    """Half-precision forward matches torch's layers"""
    module, ref = pair(student, 64, 256, device, dtype)
    module.eval()
    x = torch.randn(4, 16, 64, device=device, dtype=dtype)
    rtol, atol = HALF_TOLERANCE[dtype]
    with torch.no_grad():
        assert_close(call(module, x), ref(x), what="linear_2(relu(linear_1(x)))", context=f"x {describe(x)}",
                     rtol=rtol, atol=atol, mistakes=mistakes_for(x, ref), localise=lambda: traced_fault(module, x))
