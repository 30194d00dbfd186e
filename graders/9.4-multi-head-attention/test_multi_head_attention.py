"""Graders of kata 9.4: multi-head attention.

Hidden from students: they see each check's title and message, never this file.

The truth is `nn.MultiheadAttention(batch_first=True)` in eval mode: its `in_proj_weight` (3 d_model,
d_model) stacks W_q, W_k, W_v by rows and `out_proj` is W_o, so its weights load into the student's
w_q, w_k, w_v, w_o with `load_state_dict(strict=True)`. Its boolean masks mean "blocked" where ours
mean "may attend": a padding mask (batch, 1, 1, k_len) becomes `key_padding_mask=~mask[:, 0, 0]`, any
other mask is expanded to (batch, heads, q_len, k_len) and passed as `attn_mask=~mask` reshaped to
(batch * heads, q_len, k_len). Every query keeps at least one key (torch gives NaN for a query with
none; the course's convention, zeros, is graded in kata 9.3).
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from kata.toolkit import Mistake, assert_close, fail, remote
from kata.toolkit.common import (
    DROPOUT_IN_EVAL,
    check_batch_independence,
    check_gradients_equal,
    check_inputs_unchanged,
)
from kata.toolkit.compare import describe
from kata.toolkit.properties import given, st

# ---- classic mistakes ----------------------------------------------------------------------------

SPLIT_NO_TRANSPOSE = Mistake(
    "split-without-transpose",
    "the heads were split with view(batch, n_heads, len, d_k) without the transpose: that cuts the "
    "SEQUENCE into heads, mixing positions. Split the features: view(batch, len, n_heads, d_k), then "
    "transpose(1, 2) to (batch, n_heads, len, d_k)")
SPLIT_NO_HEAD_AXIS = Mistake(
    "split-without-transpose",
    "the heads were split with view(batch, len, n_heads, d_k) but not transposed to (batch, n_heads, len, d_k): "
    "attention then runs over the n_heads axis, mixing the heads of ONE position, instead of over the sequence. "
    "Add .transpose(1, 2) after the view (and undo it before merging)")
SCALED_BY_D_MODEL = Mistake(
    "scaled-by-sqrt-d-model",
    "the scores are divided by sqrt(d_model): each head works in d_k = d_model / n_heads dimensions, so "
    "scale by 1 / sqrt(d_k)")
MERGE_NO_TRANSPOSE = Mistake(
    "merge-wrong-order",
    "the heads were merged without moving them back next to d_k: (batch, n_heads, q_len, d_k) must be "
    "transposed to (batch, q_len, n_heads, d_k) before view(batch, q_len, d_model) (with .contiguous() "
    "or .reshape)")
MERGE_D_K_MAJOR = Mistake(
    "merge-wrong-order",
    "the heads were concatenated in the wrong order: Concat(head_1, ..., head_h) puts head 1's d_k "
    "features first, then head 2's; yours interleaves them. Use out.transpose(1, 2) (to (batch, q_len, "
    "n_heads, d_k)), then view(batch, q_len, d_model)")
NO_OUTPUT_PROJECTION = Mistake(
    "missing-output-projection",
    "the output projection is missing: after concatenating the heads, apply w_o (MultiHead = Concat(...) W^O)")
MASK_FROM_FIRST_BATCH = Mistake(
    "mask-from-first-batch",
    "every batch element was given the mask of batch element 0 (mask[0] or mask[:1]): a padding mask "
    "(batch, 1, 1, k_len) is different for each sequence; pass it on whole, it broadcasts over the heads")
VALUE_FROM_KEY = Mistake(
    "value-from-key",
    "the values were projected from `key` instead of `value`: v = w_v(value)")
NO_VALUE_ERROR = Mistake(
    "no-value-error",
    "d_model not divisible by n_heads must raise ValueError in __init__ (d_k = d_model / n_heads has to be "
    "a whole number): if d_model % n_heads: raise ValueError(...)")

D_MODEL, N_HEADS = 12, 3  # d_k = 4
NAMES = ("w_q", "w_k", "w_v", "w_o")


# ---- the built-in, with its weights in the student's layout -------------------------------------------

def torch_mha(d_model, n_heads, device, dtype, dropout=0.0):
    """nn.MultiheadAttention with random weights AND biases (its own init zeroes the biases), in eval."""
    ref = nn.MultiheadAttention(d_model, n_heads, dropout=dropout, batch_first=True, device=device, dtype=dtype)
    with torch.no_grad():
        ref.in_proj_bias.normal_(0, 0.2)
        ref.out_proj.bias.normal_(0, 0.2)
    return ref.eval()


def split_state(ref) -> dict:
    """nn.MultiheadAttention's weights under the student's names."""
    w_q, w_k, w_v = ref.in_proj_weight.detach().chunk(3, dim=0)
    b_q, b_k, b_v = ref.in_proj_bias.detach().chunk(3, dim=0)
    return {"w_q.weight": w_q, "w_q.bias": b_q, "w_k.weight": w_k, "w_k.bias": b_k,
            "w_v.weight": w_v, "w_v.bias": b_v,
            "w_o.weight": ref.out_proj.weight.detach(), "w_o.bias": ref.out_proj.bias.detach()}


def make_pair(student, device, dtype, d_model=D_MODEL, n_heads=N_HEADS, dropout=0.0):
    """(the student's module, nn.MultiheadAttention, the state both hold), both in eval."""
    ref = torch_mha(d_model, n_heads, device, dtype, dropout)
    mine = student.MultiHeadAttention(d_model, n_heads, dropout=dropout)
    if not remote.is_a(mine, "Module"):
        fail(f"MultiHeadAttention(...) should be an nn.Module, got {remote.type_name(mine)}")
    mine = mine.to(device=device, dtype=dtype)
    state = {k: v.clone() for k, v in split_state(ref).items()}
    got = {name: tuple(t.shape) for name, t in mine.state_dict().items()}
    want = {name: tuple(t.shape) for name, t in state.items()}
    if got != want:
        fail(f"MultiHeadAttention({d_model}, {n_heads}) should hold exactly the parameters {want} (four "
             f"nn.Linear(d_model, d_model) named w_q, w_k, w_v, w_o), got {got}")
    mine.load_state_dict(state, strict=True)
    return mine.eval(), ref, state


def torch_forward(ref, query, key, value, mask=None):
    """nn.MultiheadAttention on our mask convention: (output, weights (batch, heads, q_len, k_len)).

    Every mask goes in as `attn_mask` (True = blocked there). A padding mask could go in as
    `key_padding_mask=~mask[:, 0, 0]`, which torch merges into the same attn_mask, but checking that
    argument imports sympy (0.7 s of every `kata check`).
    """
    b, q_len, k_len, h = query.size(0), query.size(1), key.size(1), ref.num_heads
    kwargs = {}
    if mask is not None and mask.dim() == 2:
        kwargs["attn_mask"] = ~mask  # (q_len, k_len)
    elif mask is not None:
        kwargs["attn_mask"] = ~torch.broadcast_to(mask, (b, h, q_len, k_len)).reshape(b * h, q_len, k_len)
    return ref(query, key, value, need_weights=True, average_attn_weights=False, **kwargs)


# ---- models of the student's module, right or wrong ---------------------------------------------------

def identity_weights(q, k, mask, scale=None):
    k_len = k.size(-2)
    eye = torch.eye(k_len, dtype=q.dtype, device=q.device).expand(*k.shape[:-1], k_len)
    return F.scaled_dot_product_attention(q, k, eye, attn_mask=mask, scale=scale)


def model(state, n_heads, query, key, value, mask=None, *, split="ok", merge="ok", w_o=True, mask_first=False,
          value_from_key=False, scale_d_model=False):
    """Multi-head attention from `state`, or one of its classic mistakes: (output, weights)."""
    b, d_model = query.size(0), query.size(-1)
    d_k = d_model // n_heads

    def project(name, t):
        return F.linear(t, state[f"{name}.weight"], state[f"{name}.bias"])

    def heads(t):
        if split == "no-transpose":
            return t.reshape(b, n_heads, -1, d_k)
        if split == "no-head-axis":  # (batch, len, n_heads, d_k): attention over the heads of each position
            return t.reshape(b, -1, n_heads, d_k)
        return t.reshape(b, -1, n_heads, d_k).transpose(1, 2)

    q, k = heads(project("w_q", query)), heads(project("w_k", key))
    v = heads(project("w_v", key if value_from_key else value))
    if mask is not None and mask_first:
        mask = torch.broadcast_to(mask, (b, n_heads, q.size(-2), k.size(-2)))[:1]
    scale = d_model**-0.5 if scale_d_model else None
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)  # (b, h, q_len, d_k)
    weights = identity_weights(q, k, mask, scale)
    if merge == "no-transpose":
        out = out.reshape(b, -1, d_model)
    elif merge == "d_k-major":
        out = out.permute(0, 2, 3, 1).reshape(b, -1, d_model)
    else:
        out = out.transpose(1, 2).reshape(b, -1, d_model)
    return (project("w_o", out) if w_o else out), weights


def mistakes_for(state, n_heads, query, key, value, mask=None, *, part=0) -> dict:
    """What each classic mistake gives on this input: part 0 the output, part 1 the weights."""
    def m(**kw):
        return lambda: model(state, n_heads, query, key, value, mask, **kw)[part]
    found = {SPLIT_NO_TRANSPOSE: m(split="no-transpose", merge="no-transpose"),
             SCALED_BY_D_MODEL: m(scale_d_model=True)}
    if part == 0:  # (the weights do not depend on how the heads are merged)
        found |= {
            # Without the transpose the heads' attention is over n_heads "positions": the output comes back as
            # (batch, len, n_heads, d_k), merged either way.
            SPLIT_NO_HEAD_AXIS: m(split="no-head-axis", merge="no-transpose"),
            Mistake(SPLIT_NO_HEAD_AXIS.id, SPLIT_NO_HEAD_AXIS.explanation + " (and merged with a transpose)"):
                m(split="no-head-axis"),
            Mistake(SPLIT_NO_TRANSPOSE.id, SPLIT_NO_TRANSPOSE.explanation + " (and merged back with a transpose)"):
                m(split="no-transpose"),
            MERGE_NO_TRANSPOSE: m(merge="no-transpose"),
            MERGE_D_K_MAJOR: m(merge="d_k-major"),
            NO_OUTPUT_PROJECTION: m(w_o=False),
        }
        if value is not key:
            found[VALUE_FROM_KEY] = m(value_from_key=True)
    if mask is not None and mask.dim() == 4 and mask.size(0) > 1:
        found[MASK_FROM_FIRST_BATCH] = m(mask_first=True)
    return found


# ---- inputs ----------------------------------------------------------------------------------------------

def padding_mask(lengths, k_len, device):
    """(batch, 1, 1, k_len): True on each sequence's first `length` tokens (right padding)."""
    return (torch.arange(k_len, device=device) < torch.tensor(lengths, device=device)[:, None])[:, None, None, :]


def causal(size, device):
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()


def call(module, query, key, value, mask=None):
    out = module(query, key, value, mask=mask)
    if not isinstance(out, torch.Tensor):
        fail(f"forward should return the output tensor (batch, q_len, d_model), got {remote.type_name(out)}"
             + (" (the weights go to self.attn_weights, not the return value)" if isinstance(out, tuple) else ""))
    return out


def compare(student, device, dtype, cases, title):
    """Run each (context, query, key, value, mask) case through the student's module and torch's."""
    mine, ref, state = make_pair(student, device, dtype)
    for context, query, key, value, mask in cases:
        out = call(mine, query, key, value, mask)
        expected, _ = torch_forward(ref, query, key, value, mask)
        assert_close(out, expected, what=f"nn.MultiheadAttention ({title})", context=context,
                     mistakes=mistakes_for(state, N_HEADS, query, key, value, mask))


# ---- the module's shape ------------------------------------------------------------------------------------

def test_parameters(student):
    """Four nn.Linear(d_model, d_model) projections w_q, w_k, w_v, w_o: 4 (d_model^2 + d_model) parameters"""
    for d_model, n_heads in ((12, 3), (16, 4)):
        mha = student.MultiHeadAttention(d_model, n_heads)
        for name in NAMES:
            layer = getattr(mha, name, None)
            if not remote.is_a(layer, "Linear"):
                fail(f"MultiHeadAttention({d_model}, {n_heads}).{name} should be an nn.Linear({d_model}, {d_model}), "
                     f"got {remote.type_name(layer)}")
            if (layer.in_features, layer.out_features, layer.bias is not None) != (d_model, d_model, True):
                fail(f"MultiHeadAttention({d_model}, {n_heads}).{name} should be nn.Linear({d_model}, {d_model}) "
                     f"with a bias (all heads side by side), got {layer}")
        count = sum(p.numel() for p in mha.parameters())
        want = 4 * (d_model * d_model + d_model)
        if count != want:
            fail(f"MultiHeadAttention({d_model}, {n_heads}) should have 4 * ({d_model}^2 + {d_model}) = {want} "
                 f"parameters, got {count}")


def test_indivisible_heads_raise(student):
    """ValueError when d_model is not divisible by n_heads, and only then"""
    # An exception class of the student's own arrives as a StudentError that names its bases (`mro`): a subclass
    # of ValueError is a ValueError, as `except ValueError` would have it in the student's process.
    for d_model, n_heads in ((12, 3), (8, 8), (8, 1), (512, 8)):
        try:
            student.MultiHeadAttention(d_model, n_heads)
        except remote.StudentError as exc:
            if "ValueError" not in exc.mro:
                raise
            fail(f"MultiHeadAttention({d_model}, {n_heads}) raised {exc.type_name} ({exc}), but {d_model} is "
                 f"divisible by {n_heads}")
    for d_model, n_heads in ((10, 3), (12, 5), (7, 2)):
        try:
            student.MultiHeadAttention(d_model, n_heads)
        except (NotImplementedError, remote.StudentForbidden):
            raise
        except remote.StudentError as exc:
            if "ValueError" in exc.mro:
                continue
            fail(f"MultiHeadAttention({d_model}, {n_heads}) raised {exc.type_name} ({exc}), expected ValueError",
                 NO_VALUE_ERROR)
        fail(f"MultiHeadAttention({d_model}, {n_heads}) should raise ValueError: {d_model} is not divisible by "
             f"{n_heads}", NO_VALUE_ERROR)


# ---- against nn.MultiheadAttention ----------------------------------------------------------------------

@pytest.mark.critical
def test_self_attention_matches_torch(student, device, dtype):
    """Self-attention equals nn.MultiheadAttention with the same weights"""
    cases = []
    for b, length in ((3, 5), (1, 1), (2, 7)):
        x = torch.randn(b, length, D_MODEL, device=device, dtype=dtype)
        cases.append((f"query = key = value = x {describe(x)}, no mask", x, x, x, None))
    compare(student, device, dtype, cases, "self-attention")


@pytest.mark.critical
def test_cross_attention_matches_torch(student, device, dtype):
    """Cross-attention (q_len != k_len) equals nn.MultiheadAttention"""
    query = torch.randn(3, 4, D_MODEL, device=device, dtype=dtype)
    memory = torch.randn(3, 6, D_MODEL, device=device, dtype=dtype)
    value = torch.randn(3, 6, D_MODEL, device=device, dtype=dtype)
    compare(student, device, dtype, [
        (f"query {describe(query)}, key = value = memory {describe(memory)}", query, memory, memory, None),
        (f"query {describe(query)}, key {describe(memory)}, a different value tensor", query, memory, value, None),
    ], "cross-attention")


@pytest.mark.critical
def test_padding_mask_matches_torch(student, device, dtype):
    """A padding mask (batch, 1, 1, k_len) equals nn.MultiheadAttention with that mask"""
    x = torch.randn(3, 5, D_MODEL, device=device, dtype=dtype)
    memory = torch.randn(3, 6, D_MODEL, device=device, dtype=dtype)
    self_pad = padding_mask([5, 3, 1], 5, device)
    cross_pad = padding_mask([2, 6, 4], 6, device)
    compare(student, device, dtype, [
        ("self-attention, x (3, 5, d_model), padding mask (3, 1, 1, 5) with lengths 5, 3, 1", x, x, x, self_pad),
        ("cross-attention, query (3, 5, d_model), memory (3, 6, d_model), padding mask (3, 1, 1, 6) with lengths "
         "2, 6, 4", x, memory, memory, cross_pad),
    ], "given the mask in its own convention, True = blocked")


@pytest.mark.critical
def test_causal_mask_matches_torch(student, device, dtype):
    """A causal mask (q_len, q_len), alone and with padding, equals nn.MultiheadAttention with that mask"""
    x = torch.randn(3, 5, D_MODEL, device=device, dtype=dtype)
    both = causal(5, device) & padding_mask([5, 4, 2], 5, device)  # (3, 1, 5, 5)
    compare(student, device, dtype, [
        ("self-attention, x (3, 5, d_model), causal mask (5, 5)", x, x, x, causal(5, device)),
        ("self-attention, x (3, 5, d_model), causal AND padding mask (3, 1, 5, 5), lengths 5, 4, 2", x, x, x, both),
    ], "given the mask in its own convention, True = blocked")


def test_attn_weights(student, device):
    """attn_weights holds the last weights, (batch, heads, q_len, k_len), equal to torch's"""
    mine, ref, state = make_pair(student, device, torch.float32)
    query = torch.randn(2, 3, D_MODEL, device=device)
    memory = torch.randn(2, 5, D_MODEL, device=device)
    call(mine, memory, memory, memory)  # an earlier call: attn_weights must describe the LAST one
    mask = padding_mask([5, 2], 5, device)
    call(mine, query, memory, memory, mask)
    weights = getattr(mine, "attn_weights", None)
    context = "query (2, 3, d_model), memory (2, 5, d_model), padding mask (2, 1, 1, 5)"
    if not isinstance(weights, torch.Tensor):
        fail(f"after forward, attn_weights should hold that call's weights (batch, heads, q_len, k_len), got "
             f"{remote.type_name(weights)}")
    if tuple(weights.shape) != (2, N_HEADS, 3, 5):
        fail(f"attn_weights should be (batch, heads, q_len, k_len) = (2, {N_HEADS}, 3, 5), got "
             f"{tuple(weights.shape)} for {context}")
    _, expected = torch_forward(ref, query, memory, memory, mask)
    assert_close(weights, expected, name="attn_weights",
                 what="nn.MultiheadAttention's weights (need_weights=True, average_attn_weights=False)",
                 context=context, mistakes=mistakes_for(state, N_HEADS, query, memory, memory, mask, part=1))


@st.composite
def mha_inputs(draw):
    d_model, n_heads = draw(st.sampled_from([(4, 1), (4, 2), (4, 4), (6, 3), (8, 2)]), label="(d_model, n_heads)")
    batch = draw(st.integers(1, 3), label="batch")
    q_len = draw(st.integers(1, 5), label="q_len")
    cross = draw(st.booleans(), label="cross-attention")
    k_len = draw(st.integers(1, 5), label="k_len") if cross else q_len
    kind = draw(st.sampled_from(["none", "padding"] + ([] if cross else ["causal"])), label="mask")
    lengths = [draw(st.integers(1, k_len)) for _ in range(batch)]
    seed = draw(st.integers(0, 2**31 - 1), label="seed")
    return d_model, n_heads, batch, q_len, k_len, cross, kind, lengths, seed


@given(inputs=mha_inputs())
def test_any_shape(student, inputs):
    """Any shape equals nn.MultiheadAttention: batch 1, length 1, q_len != k_len, 1 to 4 heads"""
    d_model, n_heads, batch, q_len, k_len, cross, kind, lengths, seed = inputs
    torch.manual_seed(seed)
    dtype = torch.float64
    mine, ref, state = make_pair(student, "cpu", dtype, d_model, n_heads)
    query = torch.randn(batch, q_len, d_model, dtype=dtype)
    key = torch.randn(batch, k_len, d_model, dtype=dtype) if cross else query
    mask = {"none": None, "padding": padding_mask(lengths, k_len, "cpu"), "causal": causal(q_len, "cpu")}[kind]
    out = call(mine, query, key, key, mask)
    expected, weights = torch_forward(ref, query, key, key, mask)
    context = (f"d_model {d_model}, n_heads {n_heads}, query {describe(query)}, "
               + (f"key = value {describe(key)}" if cross else "self-attention") + f", mask: {kind}"
               + (f" (lengths {lengths})" if kind == "padding" else ""))
    assert_close(out, expected, what="nn.MultiheadAttention", context=context,
                 mistakes=mistakes_for(state, n_heads, query, key, key, mask))
    assert_close(mine.attn_weights, weights, name="attn_weights", what="nn.MultiheadAttention's weights",
                 context=context, mistakes=mistakes_for(state, n_heads, query, key, key, mask, part=1))


def test_gradients_match_torch(student, device, dtype):
    """Gradients of the inputs and of every weight equal nn.MultiheadAttention's"""
    mine, ref, state = make_pair(student, device, dtype)
    query = torch.randn(2, 4, D_MODEL, device=device, dtype=dtype)
    memory = torch.randn(2, 5, D_MODEL, device=device, dtype=dtype)
    mask = padding_mask([5, 3], 5, device)
    g = torch.randn(2, 4, D_MODEL, device=device, dtype=dtype)
    context = "query (2, 4, d_model), key = value = memory (2, 5, d_model), padding mask (2, 1, 1, 5)"
    grads = {}
    for who in ("student", "torch"):
        q, m = query.clone().requires_grad_(True), memory.clone().requires_grad_(True)
        if who == "student":
            out = call(mine, q, m, m, mask)
            # The gradients of a wrong forward are wrong too: say what is wrong with the forward first.
            assert_close(out, torch_forward(ref, query, memory, memory, mask)[0],
                         what="nn.MultiheadAttention", context=context,
                         mistakes=mistakes_for(state, N_HEADS, query, memory, memory, mask))
            if not out.requires_grad:
                fail("the output is not connected to the inputs and weights through autograd")
        else:
            out, _ = torch_forward(ref, q, m, m, mask)
        (out * g).sum().backward()
        grads[who] = {"query": q.grad, "memory (key and value)": m.grad}
    w_q, w_k, w_v = ref.in_proj_weight.grad.chunk(3, dim=0)
    b_q, b_k, b_v = ref.in_proj_bias.grad.chunk(3, dim=0)
    grads["torch"] |= {"w_q.weight": w_q, "w_q.bias": b_q, "w_k.weight": w_k, "w_k.bias": b_k,
                       "w_v.weight": w_v, "w_v.bias": b_v,
                       "w_o.weight": ref.out_proj.weight.grad, "w_o.bias": ref.out_proj.bias.grad}
    grads["student"] |= {name: p.grad for name, p in mine.named_parameters()}
    check_gradients_equal(grads["student"], grads["torch"], what="nn.MultiheadAttention's",
                          context=context + ", loss (output * g).sum()")


# ---- properties --------------------------------------------------------------------------------------------

def test_batch_independence(student, device):
    """Each batch element's output depends on that element (and its mask) only"""
    mine, _, state = make_pair(student, device, torch.float64)
    x = torch.randn(3, 5, D_MODEL, device=device, dtype=torch.float64)
    memory = torch.randn(3, 6, D_MODEL, device=device, dtype=torch.float64)
    mask = padding_mask([2, 6, 4], 6, device)
    first_mask = model(state, N_HEADS, x, memory, memory, mask, mask_first=True)[0]
    check_batch_independence(lambda b: call(mine, x[b], memory[b], memory[b], mask[b]), 3, what="run",
                             context="cross-attention, query (3, 5, d_model), memory (3, 6, d_model), padding mask "
                                     "(3, 1, 1, 6) with lengths 2, 6, 4",
                             mistakes=lambda i: {MASK_FROM_FIRST_BATCH: first_mask[i:i + 1]})


def test_permutation_equivariance(student, device):
    """Self-attention without a mask is permutation-equivariant: shuffling positions shuffles outputs"""
    mine, _, state = make_pair(student, device, torch.float64)
    x = torch.randn(2, 6, D_MODEL, device=device, dtype=torch.float64)
    out = call(mine, x, x, x)
    for perm in ([5, 4, 3, 2, 1, 0], [1, 2, 3, 4, 5, 0]):
        p = torch.tensor(perm, device=device)
        xp = x[:, p]
        assert_close(call(mine, xp, xp, xp), out[:, p], name="output for the permuted input",
                     what="the permuted output", context=f"x (2, 6, d_model), positions permuted by {perm}",
                     mistakes=mistakes_for(state, N_HEADS, xp, xp, xp))


def test_inputs_not_modified(student, device):
    """query, key, value and the mask are left unchanged"""
    mine, _, _ = make_pair(student, device, torch.float32)
    query = torch.randn(2, 4, D_MODEL, device=device)
    key, value = torch.randn(2, 5, D_MODEL, device=device), torch.randn(2, 5, D_MODEL, device=device)
    mask = padding_mask([5, 2], 5, device)
    check_inputs_unchanged(lambda: call(mine, query, key, value, mask),
                           {"query": query, "key": key, "value": value, "the mask": mask},
                           hint="make new tensors (~mask, mask.unsqueeze(1)) instead")


def test_dropout(student, device):
    """Dropout on the attention acts in train() only"""
    mine, ref, state = make_pair(student, device, torch.float64, dropout=0.5)
    x = torch.randn(2, 6, D_MODEL, device=device, dtype=torch.float64)
    expected, _ = torch_forward(ref, x, x, x)
    context = "MultiHeadAttention(d_model, n_heads, dropout=0.5), x (2, 6, d_model)"
    first, second = call(mine, x, x, x), call(mine, x, x, x)
    if not torch.equal(first, second):
        fail(f"two calls in eval mode gave different outputs for {context}: something random (dropout) still "
             "acts after .eval()", DROPOUT_IN_EVAL)
    assert_close(first, expected, what="nn.MultiheadAttention(dropout=0.5) in eval mode",
                 context=f"{context}, in eval mode", mistakes=mistakes_for(state, N_HEADS, x, x, x))
    mine.train()
    trained = call(mine, x, x, x)
    if torch.allclose(trained, expected):
        fail(f"in train mode with dropout=0.5 the output equals the eval-mode output for {context}: "
             "the dropout probability is not used (apply nn.Dropout(dropout) to the attention weights)")


HALF_TOLERANCE = {  # (rtol, atol): half-precision rounding through four projections and the softmax
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (5e-2, 5e-2),
}


@pytest.mark.dtypes(cpu=(torch.float16, torch.bfloat16), cuda=(torch.float16, torch.bfloat16))
def test_half_precision(student, device, dtype):
    """Half-precision forward with a causal and padding mask matches nn.MultiheadAttention"""
    mine, ref, _ = make_pair(student, device, torch.float32)
    mine = mine.to(dtype)
    x = torch.randn(2, 5, D_MODEL, device=device).to(dtype)
    mask = causal(5, device) & padding_mask([5, 3], 5, device)
    out = call(mine, x, x, x, mask)
    # The truth in float32 from the same (rounded) inputs and weights, then rounded once.
    ref.load_state_dict({k: v.to(dtype).float() for k, v in ref.state_dict().items()})
    state32 = split_state(ref)
    expected, _ = torch_forward(ref, x.float(), x.float(), x.float(), mask)
    rtol, atol = HALF_TOLERANCE[dtype]
    assert_close(out, expected.to(dtype), what="nn.MultiheadAttention (computed in float32)",
                 context=f"x {describe(x)}, causal and padding mask (2, 1, 5, 5)", rtol=rtol, atol=atol,
                 mistakes=mistakes_for(state32, N_HEADS, x.float(), x.float(), x.float(), mask))

