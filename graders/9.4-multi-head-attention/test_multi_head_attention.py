"""Graders of kata 9.4: multi-head attention.

Hidden from students: they see each check's title and message, never this file.

The truth is `nn.MultiheadAttention(batch_first=True)` in eval mode: its `in_proj_weight` (3 d_model,
d_model) stacks W_q, W_k, W_v by rows and `out_proj` is W_o, so its weights load into the student's
w_q, w_k, w_v, w_o with `load_state_dict(strict=True)`. Its boolean masks mean "blocked" where ours
mean "may attend": a padding mask (batch, 1, 1, k_len) becomes `key_padding_mask=~mask[:, 0, 0]`, any
other mask is expanded to (batch, heads, q_len, k_len) and passed as `attn_mask=~mask` reshaped to
(batch * heads, q_len, k_len). Every query keeps at least one key (torch gives NaN for a query with
none; the course's convention, zeros, is graded in kata 9.3).

A failure names a classic mistake when the student's output is that mistake's model on the same input (and only
one mistake's model: where two coincide, the check names neither). When none matches, `stages` localises it: the
module runs again with w_q, w_k, w_v and w_o recorded, and the first stage that differs from the reference
computed on the student's own values of the stage before is named (`fault-in-*`). Dropout's contract is graded
without seeding the student's process: each query's output must be its weights after SOME dropout (all ways
tried) averaging the values.
"""

import functools
import itertools
import math
import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from kata.toolkit import CheckFailed, ErrorPattern, Mistake, fail, remote
from kata.toolkit import assert_close as toolkit_assert_close
from kata.toolkit.common import (
    DROPOUT_IN_EVAL,
    MASK_ARITHMETIC,
    OPERATOR_ERRORS,
    bias_missing,
    check_batch_independence,
    check_follows_the_device,
    check_gradients_equal,
    check_inputs_unchanged,
    load_state,
    own_value_error,
)
from kata.toolkit.compare import describe, is_close
from kata.toolkit.localise import bound, once_each, recorded
from kata.toolkit.properties import final_example, given, st

# ---- classic mistakes ----------------------------------------------------------------------------

SPLIT_NO_TRANSPOSE = Mistake(
    "split-without-transpose",
    "the heads were split with view(batch, n_heads, len, d_k) without the transpose: that cuts the "
    "SEQUENCE into heads, mixing positions (however they are merged back). Split the features: view(batch, "
    "len, n_heads, d_k), then transpose(1, 2) to (batch, n_heads, len, d_k)")
SPLIT_NO_HEAD_AXIS = Mistake(
    "split-heads-not-moved",
    "the heads were split with view(batch, len, n_heads, d_k) but not transposed to (batch, n_heads, len, d_k): "
    "attention then runs over the n_heads axis, mixing the heads of ONE position, instead of over the sequence "
    "(however they are merged back). Add .transpose(1, 2) after the view (and undo it before merging)")
SPLIT_D_K_MAJOR = Mistake(
    "split-d-k-major",
    "the heads were split d_k-major (view(batch, len, d_k, n_heads)): head i then takes every n_heads-th feature "
    "instead of the d_k features [i*d_k, (i+1)*d_k) that W_i^Q, W_i^K, W_i^V give it. Split with view(batch, "
    "len, n_heads, d_k), then transpose(1, 2)")
SCALED_BY_D_MODEL = Mistake(
    "scaled-by-sqrt-d-model",
    "the scores are divided by sqrt(d_model): each head works in d_k = d_model / n_heads dimensions, so "
    "scale by 1 / sqrt(d_k)")
SCALED_TWICE = Mistake(
    "scaled-twice",
    "the scores are divided by d_k, not sqrt(d_k): the scale 1 / sqrt(d_k) was applied twice (to q and to k, or "
    "to q before an attention that scales again). Scale the scores q k^T once")
WRONG_SCALE = Mistake(
    "scale-not-from-d-k",
    "your weights are softmax(c q k^T) for a factor c that is not 1 / sqrt(d_k), nor one of the usual slips "
    "(a number written in the code, such as the paper's sqrt(64)?): compute the scale from this module's d_k = "
    "d_model // n_heads")
SOFTMAX_OVER_HEADS = Mistake(
    "softmax-over-heads",
    "the softmax runs over the heads dimension (dim=1 of (batch, n_heads, q_len, k_len)): each query's weights "
    "over the KEYS must sum to 1, softmax(scores, dim=-1)")
KEY_VALUE_PROJECTIONS_SWAPPED = Mistake(
    "key-value-projections-swapped",
    "the keys are projected with w_v and the values with w_k: k = w_k(key), v = w_v(value) (w_k's weights are "
    "the ones the keys are compared with, w_v's the ones averaged)")
KEYS_VALUES_SWAPPED = Mistake(
    "keys-values-swapped",
    "the keys come from `value` and the values from `key`: k = w_k(key), v = w_v(value) (forward(query, key, "
    "value, mask) takes them in that order)")
MERGE_NO_TRANSPOSE = Mistake(
    "merge-wrong-order",
    "the heads were merged without moving them back next to d_k: (batch, n_heads, q_len, d_k) must be "
    "transposed to (batch, q_len, n_heads, d_k) before view(batch, q_len, d_model) (with .contiguous() "
    "or .reshape)")
MERGE_D_K_MAJOR = Mistake(
    "merge-d-k-major",
    "the heads were concatenated in the wrong order: Concat(head_1, ..., head_h) puts head 1's d_k "
    "features first, then head 2's; yours interleaves them. Use out.transpose(1, 2) (to (batch, q_len, "
    "n_heads, d_k)), then view(batch, q_len, d_model)")
HEADS_OUT_OF_ORDER = Mistake(
    "heads-out-of-order",
    "the heads are right but concatenated in another order than Concat(head_1, ..., head_h): head i's d_k "
    "features go to columns [i*d_k, (i+1)*d_k), the order in which the split took them from w_q, w_k, w_v")
NO_OUTPUT_PROJECTION = Mistake(
    "missing-output-projection",
    "the output projection is missing: after concatenating the heads, apply w_o (MultiHead = Concat(...) W^O)")
MASK_FROM_FIRST_BATCH = Mistake(
    "mask-from-first-batch",
    "every batch element was given the mask of batch element 0 (mask[0] or mask[:1]): a padding mask "
    "(batch, 1, 1, k_len) is different for each sequence; pass it on whole, it broadcasts over the heads")
MASK_UNSQUEEZED = Mistake(
    "mask-unsqueezed",
    "the mask was given one more dimension (mask.unsqueeze(1), the Annotated Transformer's step for its (batch, "
    "1, k_len) masks): ours are already (batch, 1, 1, k_len) or (q_len, k_len) and broadcast over the heads as "
    "they are; a 5-dim mask makes the scores (batch, batch, n_heads, q_len, k_len), every sequence's scores "
    "under every sequence's mask. Pass the mask on unchanged")
VALUE_FROM_KEY = Mistake(
    "value-from-key",
    "the values were projected from `key` instead of `value`: v = w_v(value)")
NO_VALUE_ERROR = Mistake(
    "no-value-error",
    "d_model not divisible by n_heads must raise ValueError in __init__ (d_k = d_model / n_heads has to be "
    "a whole number): if d_model % n_heads: raise ValueError(...)")
NO_DROPOUT_IN_TRAINING = Mistake(
    "no-dropout-in-training",
    "in train mode, with dropout=0.5, your output is the eval-mode output: dropout never acts while training. "
    "In train mode apply nn.Dropout(dropout) to the attention weights, before they average the values")
WEIGHTS_AFTER_DROPOUT = Mistake(
    "weights-after-dropout",
    "attn_weights holds the weights after dropout (some zeroed, the rest scaled by 1 / (1 - p)): keep the "
    "weights before dropout in self.attn_weights, and use the dropped ones only to average the values")
WEIGHTS_NOT_KEPT_IN_TRAINING = Mistake(
    "attn-weights-not-kept-in-training",
    "after a call in train mode, attn_weights still holds the weights of the earlier eval-mode call: set "
    "self.attn_weights in every forward, in train mode too (the weights before dropout)")
DROPOUT_ON_OUTPUT = Mistake(
    "dropout-on-output",
    "dropout zeroes elements of the attention's output (the heads' outputs, or the module's output), not "
    "attention weights: drop the weights, dropout(weights) @ v, so that a query loses whole keys")

WEIGHTS_AVERAGED = Mistake(
    "attn-weights-averaged-over-heads",
    "attn_weights holds the heads' weights averaged, (batch, q_len, k_len): keep every head's, (batch, n_heads, "
    "q_len, k_len), as nn.MultiheadAttention does with average_attn_weights=False")

# ---- localisation, when no classic mistake matches ----------------------------------------------------------

FAULT_IN_INPUTS = Mistake(
    "fault-in-projection-inputs",
    "localised: recording what w_q, w_k and w_v were called with, one of them was not given its own argument "
    "(w_q must project `query`, w_k `key`, w_v `value`): look at what you pass to each projection")
FAULT_IN_WEIGHTS = Mistake(
    "fault-in-weights",
    "localised: w_q, w_k and w_v were given the right inputs, but your attn_weights differ from the weights "
    "computed from what YOUR w_q and w_k returned (each split into heads, scores q k^T / sqrt(d_k), the mask's "
    "blocked keys removed, softmax over the keys): look at that path (which outputs become q and k, their split, "
    "the scores, the scale, the mask, the softmax)")
FAULT_IN_VALUES = Mistake(
    "fault-in-values",
    "localised: your attn_weights are right, but what w_o receives is not them averaging YOUR w_v output "
    "(split into heads, weights @ v, heads concatenated head 1 first): look at the split of v, the product with "
    "the weights, or the merge")
FAULT_IN_OUTPUT = Mistake(
    "fault-in-output",
    "localised: everything up to w_o is right, but your module's output is not what w_o returned: return "
    "w_o(concatenated heads) as it is (nothing added after it, such as a residual or a norm)")

D_K_FLOAT = Mistake(
    "d-k-float",
    "a size given to view or reshape is a float, and sizes are ints: in Python 3, d_model / n_heads is a float "
    "(12 / 3 = 4.0); d_k = d_model // n_heads is an int")
SPLIT_LENGTH = Mistake(
    "split-length-not-the-tensors",
    "a view into heads (or back) names a length that is not the tensor's own: view(batch, L, ...) with L the "
    "queries' length, a fixed number or 1 fails once this tensor is longer or shorter (keys and values need not be "
    "as long as the queries). Let view infer it, view(batch, -1, n_heads, d_k), or take t.size(1) of the tensor itself")
SPLIT_WIDTH = Mistake(
    "heads-split-does-not-fit",
    "the split into heads does not fit the features: view(batch, -1, n_heads, d_k) needs the tensor's last "
    "dimension to be n_heads * d_k = d_model, so d_k = d_model // n_heads and the tensor split is a projection to "
    "d_model features")
# torch's words when a view cannot give the sizes asked, "shape '[2, 5, 4, 8]' is invalid for input of size 240":
# (batch, length, n_heads, d_k) for a split, (batch, length, d_model) for a merge.
_VIEW_INVALID = r"shape '\[(\d+), (-?\d+), (\d+)(?:, (\d+))?\]' is invalid for input of size (\d+)"


def _per_position(sizes: re.Match) -> int:
    return int(sizes[1]) * int(sizes[3]) * int(sizes[4] or 1)  # batch * features of one position


def _length_not_the_tensors(sizes: re.Match) -> bool:
    """The features fit a whole number of positions, but not the number asked."""
    asked, size = int(sizes[2]), int(sizes[5])
    return asked != -1 and size % _per_position(sizes) == 0 and size // _per_position(sizes) != asked


def _heads_do_not_fit(sizes: re.Match) -> bool:
    """A split with its length inferred fails only where n_heads * d_k does not divide what each batch row holds."""
    return sizes[2] == "-1" and sizes[4] is not None and int(sizes[5]) % _per_position(sizes) != 0


ERROR_PATTERNS = [
    ErrorPattern(D_K_FLOAT, message=r"(view|reshape)\(\): argument .* tuple of ints,\s*but got float"),
    ErrorPattern(SPLIT_LENGTH, message=_VIEW_INVALID, code=r"\.(view|reshape)\(", when=_length_not_the_tensors),
    ErrorPattern(SPLIT_WIDTH, message=_VIEW_INVALID, code=r"\.(view|reshape)\(", when=_heads_do_not_fit),
    own_value_error("Every check builds MultiHeadAttention with a d_model that n_heads divides: the contract's only "
                    "ValueError is `if d_model % n_heads != 0: raise ValueError(...)`, in __init__"),
    *OPERATOR_ERRORS,
    MASK_ARITHMETIC,
]

D_MODEL, N_HEADS = 12, 3  # d_k = 4
NAMES = ("w_q", "w_k", "w_v", "w_o")
MIN_SCALE_EQUATIONS = 4  # independent log-ratios of weights a fitted scale must explain
STAGE_RTOL, STAGE_ATOL = 1e-4, 1e-5  # a stage recomputed here in another order of operations still matches


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
    def mismatch(_):
        got = {name: tuple(t.shape) for name, t in mine.state_dict().items()}
        want = {name: tuple(t.shape) for name, t in state.items()}
        fail(f"MultiHeadAttention({d_model}, {n_heads}) should hold exactly the parameters {want} (four "
             f"nn.Linear(d_model, d_model) named w_q, w_k, w_v, w_o), got {got}", *bias_missing(got, state))
    load_state(mine, state, mismatch)
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

def model(state, n_heads, query, key, value, mask=None, *, split="ok", merge="ok", w_o=True, mask_first=False,
          value_from_key=False, swap_key_value=False, swap_projections=False, scale=None, softmax_dim=-1,
          mask_unsqueezed=False):
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
        if split == "d_k-major":  # head i takes features i, i + n_heads, ...
            return t.reshape(b, -1, d_k, n_heads).permute(0, 3, 1, 2)
        return t.reshape(b, -1, n_heads, d_k).transpose(1, 2)

    if swap_key_value:
        key, value = value, key
    w_k, w_v = ("w_v", "w_k") if swap_projections else ("w_k", "w_v")
    q, k = heads(project("w_q", query)), heads(project(w_k, key))
    v = heads(project(w_v, key if value_from_key else value))
    scores = q @ k.transpose(-2, -1) * (d_k**-0.5 if scale is None else scale)
    if mask is not None:
        if mask_first:
            mask = torch.broadcast_to(mask, (b, n_heads, q.size(-2), k.size(-2)))[:1]
        if mask_unsqueezed:
            mask = mask.unsqueeze(1)
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=softmax_dim)
    out = weights @ v  # (b, h, q_len, d_k)
    if merge == "no-transpose":
        out = out.reshape(b, -1, d_model)
    elif merge == "d_k-major":
        out = out.permute(0, 2, 3, 1).reshape(b, -1, d_model)
    else:
        out = out.transpose(1, 2).reshape(b, -1, d_model)
    return (project("w_o", out) if w_o else out), weights


def fitted_scale(state, n_heads, query, key, weights) -> float:
    """The factor c for which `weights` (the student's attn_weights) are closest to softmax(c q k^T), q and k
    split as they should be: least squares on the log-weights, each row centred (the softmax's shift). Only
    where the rows give several equations for c (a single row of two keys fits any weights exactly)."""
    b, d_k = query.size(0), query.size(-1) // n_heads
    q, k = (F.linear(t, state[f"{name}.weight"], state[f"{name}.bias"]).reshape(b, -1, n_heads, d_k).transpose(1, 2)
            for name, t in (("w_q", query), ("w_k", key)))
    raw = q @ k.transpose(-2, -1)
    if weights.shape != raw.shape:
        raise ValueError("the weights are not (batch, n_heads, q_len, k_len)")
    kept = weights > 0
    logs = torch.where(kept, weights.to(raw.dtype).log(), 0.0)
    rows = kept.sum(-1, keepdim=True).clamp_min(1)
    if int((rows - 1).sum()) < MIN_SCALE_EQUATIONS:
        raise ValueError("too few weights to tell a scale")
    centred_log = torch.where(kept, logs - logs.sum(-1, keepdim=True) / rows, 0.0)
    centred_raw = torch.where(kept, raw - torch.where(kept, raw, 0.0).sum(-1, keepdim=True) / rows, 0.0)
    return float((centred_log * centred_raw).sum() / (centred_raw * centred_raw).sum())


def mistakes_for(state, n_heads, query, key, value, mask=None, *, part=0, weights_seen=None) -> dict:
    """What each classic mistake gives on this input: part 0 the output, part 1 the weights. `weights_seen`,
    a function giving the student's attn_weights, lets a scale read off them be tried."""
    d_k = query.size(-1) // n_heads

    def m(**kw):
        return lambda: model(state, n_heads, query, key, value, mask, **kw)[part]

    @functools.cache
    def heads():  # (batch, n_heads, q_len, d_k), computed once for every order tried
        concat = model(state, n_heads, query, key, value, mask, w_o=False)[0]  # (batch, q_len, d_model)
        return concat.unflatten(-1, (n_heads, d_k)).transpose(1, 2)

    def in_order(order):
        return lambda: F.linear(heads()[:, list(order)].transpose(1, 2).flatten(-2), state["w_o.weight"],
                                state["w_o.bias"])

    def fitted(**kw):
        def compute():
            c = fitted_scale(state, n_heads, query, key, weights_seen())
            if any(math.isclose(c, usual, rel_tol=1e-3) for usual in (d_k**-0.5, query.size(-1)**-0.5, 1 / d_k)):
                raise ValueError("a scale a named mistake (or the reference) uses")
            return model(state, n_heads, query, key, value, mask, scale=c, **kw)[part]
        return compute

    found = {  # Without the transpose the split's output comes back (batch, len, n_heads, d_k), merged either way.
        SPLIT_NO_TRANSPOSE: (m(split="no-transpose", merge="no-transpose"), m(split="no-transpose")),
        SPLIT_NO_HEAD_AXIS: (m(split="no-head-axis", merge="no-transpose"), m(split="no-head-axis")),
        SPLIT_D_K_MAJOR: (m(split="d_k-major"), m(split="d_k-major", merge="d_k-major")),
        SCALED_BY_D_MODEL: (m(scale=query.size(-1)**-0.5),),
        SCALED_TWICE: (m(scale=1 / d_k),),
        SOFTMAX_OVER_HEADS: (m(softmax_dim=1),),
    }
    # Where no query has two keys to weigh, the keys' projection changes nothing: values projected with w_k (and the
    # keys rightly with w_k) look the same as the two projections swapped, which is then not said.
    if key.size(1) > 1 and (mask is None or bool((mask.sum(-1) >= 2).any())):
        found[KEY_VALUE_PROJECTIONS_SWAPPED] = (m(swap_projections=True),)
    if weights_seen is not None:
        found[WRONG_SCALE] = (fitted(),)
    if value is not key:
        found[KEYS_VALUES_SWAPPED] = (m(swap_key_value=True),)
    if part == 0:  # (the weights do not depend on the values nor on how the heads are merged)
        found |= {
            MERGE_NO_TRANSPOSE: (m(merge="no-transpose"),),
            MERGE_D_K_MAJOR: (m(merge="d_k-major"),),
            HEADS_OUT_OF_ORDER: tuple(in_order(order) for order in itertools.permutations(range(n_heads))
                                      if list(order) != sorted(order)),
            NO_OUTPUT_PROJECTION: (m(w_o=False),),
        }
        if value is not key:
            found[VALUE_FROM_KEY] = (m(value_from_key=True),)
    if mask is not None and mask.dim() == 4 and mask.size(0) > 1:
        found[MASK_FROM_FIRST_BATCH] = (m(mask_first=True),)
    if mask is not None:
        found[MASK_UNSQUEEZED] = (m(mask_unsqueezed=True),)
    return found


def assert_close(actual, expected, **kwargs):
    """The toolkit's assert_close, except that a failure matching the models of several mistakes names none: on
    this input those models coincide (a scale by 1/d_k is one by 1/sqrt(d_model) when d_k = n_heads, any split is
    right for one position), so it cannot tell which was made; the other checks' inputs can."""
    try:
        toolkit_assert_close(actual, expected, **kwargs)
    except CheckFailed as failure:
        if len({mistake.id for mistake in failure.mistakes}) > 1:
            raise CheckFailed(str(failure), ()) from None
        raise


def stages(mine, n_heads, query, key, value, mask=None):
    """Localisation by stages, for a failure no classic mistake matched: the module runs again with w_q, w_k,
    w_v and w_o recorded (`recorded`), and each stage is compared with the reference's computed on the
    student's own values from the stage before (an error upstream does not cascade): the projections' inputs,
    the weights from the recorded q and k, what w_o receives from those weights and the recorded v, and the
    output as w_o gave it. The first stage that differs is at fault; an incomplete trace (a projection not
    called as a module, or called twice) says nothing."""
    def find():
        with recorded(mine, NAMES) as calls:
            out = call(mine, query, key, value, mask)
        seen = once_each(calls, NAMES)
        weights = mine.attn_weights
        if seen is None or not isinstance(weights, torch.Tensor):
            return ()
        for name, argument in (("w_q", query), ("w_k", key), ("w_v", value)):
            if not is_close(bound(seen[name], ("input",))[0], argument, rtol=0.0, atol=0.0):
                return (FAULT_IN_INPUTS,)

        def split(t):  # (batch, len, d_model) -> (batch, n_heads, len, d_k)
            return t.unflatten(-1, (n_heads, -1)).transpose(1, 2)

        q, k, v = (split(seen[name].output.detach()) for name in ("w_q", "w_k", "w_v"))
        scores = q @ k.transpose(-2, -1) * q.size(-1)**-0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        if not is_close(weights, torch.softmax(scores, dim=-1), rtol=STAGE_RTOL, atol=STAGE_ATOL):
            return (FAULT_IN_WEIGHTS,)
        concat = (weights @ v).transpose(1, 2).flatten(-2)  # (batch, q_len, d_model)
        if not is_close(bound(seen["w_o"], ("input",))[0], concat, rtol=STAGE_RTOL, atol=STAGE_ATOL):
            return (FAULT_IN_VALUES,)
        if not is_close(out, seen["w_o"].output, rtol=0.0, atol=0.0):
            return (FAULT_IN_OUTPUT,)
        return ()
    return find


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
                     mistakes=mistakes_for(state, N_HEADS, query, key, value, mask,
                                           weights_seen=lambda: mine.attn_weights),
                     localise=stages(mine, N_HEADS, query, key, value, mask))


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
            # Raised on, to be reported as an error of the student's code: ERROR_PATTERNS then tells whether it
            # was the student's own raise (its line is known only there).
            exc.add_note(f"MultiHeadAttention({d_model}, {n_heads}) raised it, but {d_model} is divisible by "
                         f"{n_heads}")
            raise
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
    _, expected = torch_forward(ref, query, memory, memory, mask)
    if tuple(weights.shape) != (2, N_HEADS, 3, 5):
        unsqueezed = is_close(weights, model(state, N_HEADS, query, memory, memory, mask, mask_unsqueezed=True)[1])
        averaged = is_close(weights, expected.mean(dim=1))
        fail(f"attn_weights should be (batch, heads, q_len, k_len) = (2, {N_HEADS}, 3, 5), got "
             f"{tuple(weights.shape)} for {context}",
             *((MASK_UNSQUEEZED,) if unsqueezed else (WEIGHTS_AVERAGED,) if averaged else ()))
    assert_close(weights, expected, name="attn_weights",
                 what="nn.MultiheadAttention's weights (need_weights=True, average_attn_weights=False)",
                 context=context, mistakes=mistakes_for(state, N_HEADS, query, memory, memory, mask, part=1,
                                                        weights_seen=lambda: weights),
                 localise=stages(mine, N_HEADS, query, memory, memory, mask))


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
    named = final_example()  # the mistakes are looked for in the example reported, not in those tried shrinking
    assert_close(out, expected, what="nn.MultiheadAttention", context=context,
                 mistakes=mistakes_for(state, n_heads, query, key, key, mask,
                                       weights_seen=lambda: mine.attn_weights) if named else None,
                 localise=stages(mine, n_heads, query, key, key, mask) if named else None)
    seen = mine.attn_weights
    assert_close(seen, weights, name="attn_weights", what="nn.MultiheadAttention's weights", context=context,
                 mistakes=mistakes_for(state, n_heads, query, key, key, mask, part=1,
                                       weights_seen=lambda: seen) if named else None)


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
                         mistakes=mistakes_for(state, N_HEADS, query, memory, memory, mask,
                                               weights_seen=lambda: mine.attn_weights),
                         localise=stages(mine, N_HEADS, query, memory, memory, mask))
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


def test_new_tensors_follow_the_inputs(student):
    """Tensors forward creates are made on the inputs' device (seen on torch's meta device, on every machine)"""
    mha = student.MultiHeadAttention(D_MODEL, N_HEADS, dropout=0.5).to("meta")  # in train mode: the dropout runs too
    query, memory = torch.empty(2, 4, D_MODEL, device="meta"), torch.empty(2, 5, D_MODEL, device="meta")
    mask = torch.empty(2, 1, 1, 5, dtype=torch.bool, device="meta")
    for what, run in (("no mask", lambda: call(mha, query, memory, memory)),
                      ("a padding mask (2, 1, 1, 5)", lambda: call(mha, query, memory, memory, mask))):
        check_follows_the_device(run, f"MultiHeadAttention(d_model, n_heads, dropout=0.5).to('meta') on query "
                                      f"(2, 4, d_model), key = value (2, 5, d_model) and {what}, on the meta device")


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
             "the dropout probability is not used (apply nn.Dropout(dropout) to the attention weights)",
             NO_DROPOUT_IN_TRAINING)


def test_dropout_on_the_weights(student, device):
    """In train mode attn_weights holds the weights before dropout; dropout drops weights, not the heads' outputs"""
    p = 0.5
    mine, _, state = make_pair(student, device, torch.float64, dropout=p)
    # w_o the identity: the output is then the concatenated heads, Concat(dropout(weights_i) @ v_i).
    state |= {"w_o.weight": torch.eye(D_MODEL, device=device, dtype=torch.float64),
              "w_o.bias": torch.zeros(D_MODEL, device=device, dtype=torch.float64)}
    load_state(mine, state)
    x = torch.randn(2, 4, D_MODEL, device=device, dtype=torch.float64)
    context = (f"MultiHeadAttention(d_model, n_heads, dropout={p}), self-attention on x (2, 4, d_model), w_o set to "
               "the identity (so the output is the concatenated heads)")
    heads, weights = model(state, N_HEADS, x, x, x, w_o=False)  # (2, 4, d_model), (2, n_heads, 4, 4)
    # In eval mode first: a mistake that is not dropout's is named there.
    assert_close(call(mine, x, x, x), heads, what="the concatenated heads", context=f"{context}, in eval mode",
                 mistakes=mistakes_for(state, N_HEADS, x, x, x, weights_seen=lambda: mine.attn_weights))
    # In train mode on another x: weights left from the eval-mode call must not pass for this call's.
    eval_weights = weights
    mine.train()
    x = torch.randn(2, 4, D_MODEL, device=device, dtype=torch.float64)
    heads, weights = model(state, N_HEADS, x, x, x, w_o=False)
    context += ", then in train mode on another x"
    out = call(mine, x, x, x)
    seen = mine.attn_weights
    assert_close(seen, weights, name="attn_weights", what="the weights before dropout", context=context,
                 mistakes={WEIGHTS_AFTER_DROPOUT: lambda: torch.where(seen == 0, 0.0, weights / (1 - p)),
                           WEIGHTS_NOT_KEPT_IN_TRAINING: eval_weights})
    # Each query's output must be some dropout of its weights: each weight zeroed or scaled by 1 / (1 - p), all
    # 2^k_len ways tried.
    v = F.linear(x, state["w_v.weight"], state["w_v.bias"]).unflatten(-1, (N_HEADS, -1)).transpose(1, 2)
    keep = torch.tensor(list(itertools.product((0.0, 1.0), repeat=4)), device=device, dtype=torch.float64)
    outcomes = torch.einsum("mk,bhqk,bhkd->bhqmd", keep, weights / (1 - p), v)  # (2, n_heads, 4, 16, d_k)
    got = out.detach().unflatten(-1, (N_HEADS, -1)).transpose(1, 2)  # (2, n_heads, 4, d_k)
    explained = ((outcomes - got.unsqueeze(-2)).abs() <= 1e-9 + 1e-7 * outcomes.abs()).all(-1).any(-1)
    if not explained.all():
        # Dropout on the output instead: each element zeroed or scaled by 1 / (1 - p).
        on_output = is_close(out, torch.where(out == 0, 0.0, heads / (1 - p)))
        fail(f"in train mode, {int((~explained).sum())} of {explained.numel()} (batch, head, query) outputs are "
             "not their weights after any dropout, averaging the values (dropout(weights) @ v, each weight zeroed "
             f"or scaled by 1 / (1 - p)), for {context}", *((DROPOUT_ON_OUTPUT,) if on_output else ()))


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
    expected, _ = torch_forward(ref, x.float(), x.float(), x.float(), mask)
    rtol, atol = HALF_TOLERANCE[dtype]
    # No mistake is named here: within these tolerances the models of several mistakes (a scale by 1/d_k, by
    # 1/sqrt(d_model), by a constant) match one another; the float32 and float64 checks tell them apart.
    assert_close(out, expected.to(dtype), what="nn.MultiheadAttention (computed in float32)",
                 context=f"x {describe(x)}, causal and padding mask (2, 1, 5, 5)", rtol=rtol, atol=atol)

