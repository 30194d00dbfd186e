"""Graders of kata 9.3: scaled dot-product attention and one attention head.

Hidden from students: they see each check's title and message, never this file.

The truth is `F.scaled_dot_product_attention` (SDPA): boolean masks with True = may attend, and a
query whose keys are all blocked gets zero weights and a zero output (recent torch; the reference
does the same and the README says so). SDPA does not return its weights; they are read out by
attending with the identity matrix as the values (row i of the output is then row i of the weights).
"""

import math

import numpy
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from kata.toolkit import ErrorPattern, Mistake, assert_close, fail, remote
from kata.toolkit.common import (
    MASK_ARITHMETIC,
    OPERATOR_ERRORS,
    bias_missing,
    check_follows_the_device,
    check_gradients_equal,
    check_inputs_unchanged,
    load_state,
)
from kata.toolkit.compare import describe, is_close, matching_mistakes
from kata.toolkit.gradients import gradcheck
from kata.toolkit.localise import once_each, recorded
from kata.toolkit.properties import given, st

# ---- classic mistakes ----------------------------------------------------------------------------

NO_SCALE = Mistake("missing-scale",
                   "the scores were not divided by sqrt(d_k): q @ k^T grows like sqrt(d_k) and saturates the "
                   "softmax. Use scores = q @ k.transpose(-2, -1) / math.sqrt(d_k), with d_k = q.size(-1)")
SCALE_BY_D_K = Mistake("wrong-scale",
                       "the scores were divided by d_k, not by its square root: divide by math.sqrt(d_k)")
SCALE_WRONG_SIZE = Mistake("wrong-scale",
                           "the scores were divided by the square root of the wrong size: d_k is the size of "
                           "the queries' and keys' LAST dimension, q.size(-1)")
SCALE_BY_D_MODEL = Mistake("scaled-by-sqrt-d-model",
                           "the head's scores were divided by sqrt(d_model): the scale is 1/sqrt(d_k), the "
                           "size of the head's own queries and keys (d_head), not of the model")
SOFTMAX_OVER_QUERIES = Mistake("softmax-over-queries",
                               "the softmax ran over the queries (dim -2): each query's weights must sum to 1 "
                               "over the KEYS, the last dimension of the (..., q_len, k_len) scores (dim=-1)")
INVERTED_MASK = Mistake("inverted-mask",
                        "the mask is used the wrong way round: True means MAY attend, so block where the mask "
                        "is False (scores.masked_fill(~mask, ...)), not where it is True")
MASK_AFTER_SOFTMAX = Mistake("mask-after-softmax",
                             "the weights were masked after the softmax, so the remaining ones no longer sum "
                             "to 1: block the scores BEFORE the softmax (fill them with -inf)")
NAN_ON_EMPTY_ROW = Mistake("nan-on-fully-masked-row",
                           "a query whose keys are all blocked came out as NaN: softmax of a row of -inf is "
                           "0/0. Give such rows zero weights (and so a zero output), as SDPA does, e.g. "
                           "weights = weights.masked_fill(~mask, 0.0) after the softmax")
FINITE_FILL = Mistake("finite-mask-fill",
                      "a query whose keys are all blocked got the uniform average of all values: the blocked "
                      "scores were filled with a finite number (like -1e9), so a fully blocked row is a row of "
                      "equal scores. Fill with float('-inf') and zero the weights of fully blocked rows")
FILL_ABOVE_SCORES = Mistake("finite-fill-above-scores",
                            "the blocked scores were filled with a finite number (like -1e9) that is not below "
                            "every score: where the allowed scores are lower still, the blocked keys take their "
                            "weight. Fill with float('-inf'), below every score (torch.finfo(scores.dtype).min, "
                            "the lowest finite one, works too)")
ZERO_FILL = Mistake("mask-fill-zero",
                    "the blocked scores were set to 0 (masked_fill(~mask, 0), or scores * mask), which is an "
                    "ordinary score: exp(0 - max) is not 0, so blocked keys still get weight. Fill them with "
                    "float('-inf') before the softmax")
HALF_OVERFLOW = Mistake("mask-fill-overflows-half",
                        "the mask fill value does not fit in float16 (largest magnitude 65504): -1e9 (or "
                        "finfo(float32).min) cannot be stored in a half-precision tensor. Fill with "
                        "float('-inf'), which every floating dtype has")
CONTEXT_IGNORED = Mistake("context-ignored",
                          "the keys and values came from x instead of `context`: in cross-attention the queries "
                          "come from x and the keys AND values from context (x only when context is None)")
QUERIES_FROM_CONTEXT = Mistake("context-ignored",
                               "the queries came from `context`: queries are always projected from x; keys and "
                               "values come from context")

# ---- where the fault is, when no classic mistake matched (localisation) ----------------------------------

HEAD_MASK_IGNORED = Mistake("head-mask-ignored",
                            "AttentionHead.forward does not pass its mask on to the attention: every key stays "
                            "visible. Call scaled_dot_product_attention(q, k, v, mask)")
FAULT_AFTER_SOFTMAX = Mistake("fault-in-weighted-sum",
                              "your weights equal SDPA's but your output does not, so the fault is after the "
                              "softmax, where the weights average the values: output = weights @ v, "
                              "(..., q_len, k_len) @ (..., k_len, d_v)")
FAULT_IN_WEIGHTS = Mistake("fault-in-weights",
                           "your weights already differ from SDPA's, so the fault is before the weighted sum: in "
                           "the scores q @ k.transpose(-2, -1), their scale 1 / sqrt(d_k), the mask or the softmax "
                           "over the keys (compare your weights with softmax(q k^T / sqrt(d_k)) on a small input)")
FAULT_IN_PROJECTION_INPUT = Mistake("fault-in-projection-input",
                                    "a projection of the head read the wrong input: queries are projected from x, "
                                    "keys and values from context")

KEYS_NOT_TRANSPOSED = Mistake("keys-not-transposed",
                              "q @ k^T needs the keys with their last two dimensions swapped, k.transpose(-2, -1): "
                              "your product of q and k has sizes that do not chain (k not transposed, or transposed "
                              "over another pair: transpose(1, 2) swaps the wrong pair once a heads dimension comes "
                              "first)")

ERROR_PATTERNS = [
    # torch's words when the matrices of a product do not chain (or their leading dimensions do not broadcast),
    # raised from a line that multiplies q by k and holds no mask, which could be the tensor that did not broadcast.
    ErrorPattern(KEYS_NOT_TRANSPOSED, message=r"Expected size for first two dimensions of batch2 tensor|mat1 and mat2 "
                                              r"shapes cannot be multiplied|must match the size of tensor b",
                 code=r"^(?!.*mask).*(\bq\s*@\s*k\b|(matmul|bmm)\(\s*q\s*,\s*k\b)"),
    ErrorPattern(HALF_OVERFLOW, message=r"cannot be converted to type .*Half without overflow"),
    *OPERATOR_ERRORS,
    MASK_ARITHMETIC,
]


# ---- what the built-in (and each classic mistake) computes ----------------------------------------

def _on_cpu(*tensors):
    return [None if t is None else t.cpu() for t in tensors]  # (differentiable: gradients flow back)


def sdpa(q, k, v, mask=None):
    """PyTorch's attention: the output. Computed on the CPU, whose math backend is the documented one
    (fused CUDA kernels may treat a fully blocked query differently), then moved to q's device."""
    return F.scaled_dot_product_attention(*_on_cpu(q, k, v), attn_mask=_on_cpu(mask)[0]).to(q.device)


def sdpa_weights(q, k, mask=None):
    """PyTorch's attention weights: attend with the identity as the values."""
    k_len = k.size(-2)
    eye = torch.eye(k_len, dtype=q.dtype).expand(*k.shape[:-1], k_len)
    return F.scaled_dot_product_attention(*_on_cpu(q, k), eye, attn_mask=_on_cpu(mask)[0]).to(q.device)


def attend(q, k, v, mask=None, *, scale=None, dim=-1, invert=False, empty="zero", after=False, fill=None):
    """A model of attention, right or wrong: (output, weights).

    scale: the factor on q k^T (1/sqrt(d_k) when None); dim: the softmax's dim; invert: the mask used
    the wrong way round; empty: what a fully blocked row becomes ("zero", "nan", or "uniform" for a
    finite fill), "zero" being blocked weights zeroed after the softmax; after: the mask applied to the
    weights after the softmax; fill: what blocked scores become (-inf; -1e30 for "uniform").
    """
    scale = 1 / math.sqrt(q.size(-1)) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale
    allowed = None if mask is None else (~mask if invert else mask)
    if allowed is not None and not after:
        if fill is None:
            fill = -1e30 if empty == "uniform" else float("-inf")
        scores = scores.masked_fill(~allowed, fill)
    weights = torch.softmax(scores, dim=dim)
    if allowed is not None and (after or empty == "zero"):
        weights = weights.masked_fill(~allowed, 0.0)
    return weights @ v, weights


def _full(q, k, mask):
    # numpy's broadcast_shapes: torch's imports sympy on first use (half a second of every run of this kata).
    lead = numpy.broadcast_shapes(tuple(q.shape[:-2]), tuple(k.shape[:-2]), tuple(mask.shape[:-2]))
    return torch.broadcast_to(mask, (*lead, q.size(-2), k.size(-2)))


def has_empty_row(q, k, mask) -> bool:
    """Some query may attend to no key."""
    return bool((~_full(q, k, mask).any(-1)).any())


def has_empty_column(q, k, mask) -> bool:
    """Some key is blocked for every query."""
    return bool((~_full(q, k, mask).any(-2)).any())


def mistakes_for(q, k, v, mask=None, *, part=0) -> dict:
    """What each classic mistake gives for this input: part 0 the output, part 1 the weights."""
    d_k, q_len, d_v = q.size(-1), q.size(-2), v.size(-1)
    found = {
        SCALE_BY_D_K: lambda: attend(q, k, v, mask, scale=1 / d_k)[part],
        SOFTMAX_OVER_QUERIES: lambda: attend(q, k, v, mask, dim=-2)[part],
    }
    # Where some size is 1, dividing by its square root is no scale at all: a file that takes d_k from that
    # dimension (q.shape[1], say) would be told it has none.
    if 1 not in (*q.shape, *k.shape, *v.shape):
        found[NO_SCALE] = lambda: attend(q, k, v, mask, scale=1.0)[part]
    if mask is not None and has_empty_column(q, k, mask):
        found[Mistake(SOFTMAX_OVER_QUERIES.id, SOFTMAX_OVER_QUERIES.explanation
                      + " (and a key blocked for every query gives NaN)")] = (
            lambda: attend(q, k, v, mask, dim=-2, empty="nan")[part])
    # Offered only where they differ from the other candidates (a size of 1 is no scale at all).
    if q_len not in (1, d_k):
        found[Mistake(SCALE_WRONG_SIZE.id, SCALE_WRONG_SIZE.explanation + " (yours used q_len, dim -2)")] = (
            lambda: attend(q, k, v, mask, scale=1 / math.sqrt(q_len))[part])
    if d_v not in (1, d_k, q_len):
        found[Mistake(SCALE_WRONG_SIZE.id, SCALE_WRONG_SIZE.explanation + " (yours used d_v, the values' size)")] = (
            lambda: attend(q, k, v, mask, scale=1 / math.sqrt(d_v))[part])
    if mask is not None:
        found[INVERTED_MASK] = lambda: attend(q, k, v, mask, invert=True)[part]
        if has_empty_row(q, k, ~mask):
            found[Mistake(INVERTED_MASK.id, INVERTED_MASK.explanation + " (and fully blocked rows give NaN)")] = (
                lambda: attend(q, k, v, mask, invert=True, empty="nan")[part])
            found[Mistake(INVERTED_MASK.id, INVERTED_MASK.explanation + " (and fully blocked rows are uniform)")] = (
                lambda: attend(q, k, v, mask, invert=True, empty="uniform")[part])
        found[MASK_AFTER_SOFTMAX] = lambda: attend(q, k, v, mask, after=True)[part]
        found[ZERO_FILL] = lambda: attend(q, k, v, mask, fill=0.0, empty="uniform")[part]
        found[Mistake(ZERO_FILL.id, ZERO_FILL.explanation + " (yours then zeroes the blocked weights, so the "
                      "others no longer sum to 1)")] = lambda: attend(q, k, v, mask, fill=0.0)[part]
        if has_empty_row(q, k, mask):
            found[NAN_ON_EMPTY_ROW] = lambda: attend(q, k, v, mask, empty="nan")[part]
            found[FINITE_FILL] = lambda: attend(q, k, v, mask, empty="uniform")[part]
    return found


# ---- calling the student's code ---------------------------------------------------------------------

def call(student, q, k, v, mask=None, context=""):
    """The student's (output, weights), after checking that a pair came back.

    The inputs cross to the student's process by value: code that changes an input in place changes only
    its own copy, so it is named by the check for that alone (`test_inputs_not_modified`), never judged
    against a reference computed from the changed input (which would name another mistake)."""
    result = student.scaled_dot_product_attention(q, k, v, mask=mask)
    if not isinstance(result, tuple | list) or len(result) != 2:
        fail("scaled_dot_product_attention should return a pair (output, weights), got "
             f"{remote.type_name(result)}" + (f" of length {len(result)}" if isinstance(result, tuple | list) else "")
             + (f" for {context}" if context else ""))
    return result


def weights_at_fault(weights, q, k, v, mask) -> tuple[Mistake, ...]:
    """Where the output went wrong, read from the weights the student returned beside it (the intermediate the
    contract exposes): right weights put the fault after the softmax; wrong ones, before it (named by a classic
    mistake of the weights where one matches). Nothing for weights of the wrong shape."""
    expected = sdpa_weights(q, k, mask)
    if not isinstance(weights, torch.Tensor) or weights.shape != expected.shape:
        return ()
    if is_close(weights, expected):
        return (FAULT_AFTER_SOFTMAX,)
    return matching_mistakes(weights, mistakes_for(q, k, v, mask, part=1), rtol=1e-5, atol=1e-6) or (
        FAULT_IN_WEIGHTS,)


def check_pair(student, q, k, v, mask, context):
    """Compare output and weights with SDPA's, offering every classic mistake."""
    out, weights = call(student, q, k, v, mask, context)
    assert_close(out, sdpa(q, k, v, mask), what="F.scaled_dot_product_attention", context=context,
                 mistakes=mistakes_for(q, k, v, mask, part=0),
                 localise=lambda: weights_at_fault(weights, q, k, v, mask))
    assert_close(weights, sdpa_weights(q, k, mask), name="weights", what="SDPA's attention weights",
                 context=context, mistakes=mistakes_for(q, k, v, mask, part=1))


def qkv(device, dtype, lead, q_len, k_len, d_k, d_v, scale=1.0):
    def make(*shape):
        return torch.randn(*lead, *shape, device=device, dtype=dtype) * scale
    return make(q_len, d_k), make(k_len, d_k), make(k_len, d_v)


def with_one_key(mask: torch.Tensor) -> torch.Tensor:
    """`mask` with one allowed key put back in every fully blocked row (a random one)."""
    pick = torch.randint(mask.size(-1), mask.shape[:-1], device=mask.device)
    one = nn.functional.one_hot(pick, mask.size(-1)).bool()
    return mask | (one & ~mask.any(-1, keepdim=True))


def causal(q_len, k_len, device):
    return torch.ones(q_len, k_len, dtype=torch.bool, device=device).tril()


# ---- scaled_dot_product_attention --------------------------------------------------------------------

NO_MASK_CASES = [  # (lead dims, q_len, k_len, d_k, d_v)
    ((2,), 5, 5, 8, 8),
    ((3,), 4, 7, 6, 6),    # q_len != k_len (cross-attention)
    ((2,), 5, 6, 8, 3),    # d_v != d_k
    ((2, 3), 4, 4, 16, 5),  # extra batch dims: (batch, heads, len, dim)
    ((), 6, 3, 4, 2),      # no batch dims at all
    ((1, 1), 1, 1, 1, 1),  # everything of size 1
]


@pytest.mark.critical
def test_matches_sdpa(student, device, dtype):
    """Equal to F.scaled_dot_product_attention without a mask (output and weights)"""
    for lead, q_len, k_len, d_k, d_v in NO_MASK_CASES:
        q, k, v = qkv(device, dtype, lead, q_len, k_len, d_k, d_v, scale=1.5)
        check_pair(student, q, k, v, None, f"q {describe(q)}, k {describe(k)}, v {describe(v)}, no mask")


def mask_cases(device):
    """(name, q shape lead dims, q_len, k_len, d_k, d_v, mask): no fully blocked row in any of them."""
    pad = torch.tensor([[True] * 6, [True] * 4 + [False] * 2, [True] * 2 + [False] * 4], device=device)
    random_3d = with_one_key(torch.rand(3, 5, 6, device=device) > 0.5)
    random_4d = with_one_key(torch.rand(2, 3, 4, 4, device=device) > 0.5)
    return [
        ("a padding mask (batch, 1, k_len), different per batch element", (3,), 5, 6, 8, 8, pad[:, None, :]),
        ("a causal mask (q_len, k_len)", (2,), 5, 5, 8, 4, causal(5, 5, device)),
        ("a causal mask (q_len, k_len), extra batch dims", (2, 3), 4, 4, 6, 6, causal(4, 4, device)),
        ("a mask (batch, q_len, k_len), one per query", (3,), 5, 6, 8, 3, random_3d),
        ("a mask (batch, heads, q_len, k_len)", (2, 3), 4, 4, 4, 5, random_4d),
    ]


@pytest.mark.critical
def test_masks_match_sdpa(student, device, dtype):
    """Equal to F.scaled_dot_product_attention with boolean masks (padding, causal, per query)"""
    for name, lead, q_len, k_len, d_k, d_v, mask in mask_cases(device):
        q, k, v = qkv(device, dtype, lead, q_len, k_len, d_k, d_v, scale=1.5)
        check_pair(student, q, k, v, mask, f"{name} {tuple(mask.shape)}, q {describe(q)}, k {describe(k)}")


def test_weights_are_distributions(student, device):
    """Weights sum to one over the keys and are exactly zero on blocked keys"""
    for name, lead, q_len, k_len, d_k, d_v, mask in mask_cases(device):
        q, k, v = qkv(device, torch.float32, lead, q_len, k_len, d_k, d_v, scale=3.0)
        context = f"{name} {tuple(mask.shape)}, q {describe(q)}"
        _, weights = call(student, q, k, v, mask, context)
        expected_shape = (*lead, q_len, k_len)
        if not isinstance(weights, torch.Tensor) or tuple(weights.shape) != expected_shape:
            fail(f"weights should be (..., q_len, k_len) = {expected_shape}, got {describe(weights)} for {context}")
        blocked = ~torch.broadcast_to(mask, weights.shape)
        leaked = weights.detach()[blocked]
        if (leaked != 0).any():
            worst = float(leaked.abs().nan_to_num(nan=float("inf")).max())
            fail(f"{int((leaked != 0).sum())} of {int(blocked.sum())} weights on blocked keys are not exactly 0 "
                 f"(largest {worst:.3g}) for {context}: blocked scores must become -inf before the softmax, "
                 "so that exp() gives them exactly 0", *([INVERTED_MASK] if (weights.detach()[~blocked] == 0).all()
                                                         else []))
        assert_close(weights.sum(-1), torch.ones(expected_shape[:-1], device=device),
                     name="sum of the weights over the keys", what="1 for every query", context=context,
                     mistakes={SOFTMAX_OVER_QUERIES: lambda q=q, k=k, v=v, m=mask:
                               attend(q, k, v, m, dim=-2)[1].sum(-1),
                               MASK_AFTER_SOFTMAX: lambda q=q, k=k, v=v, m=mask:
                               attend(q, k, v, m, after=True)[1].sum(-1)})


def test_fully_masked_rows(student, device, dtype):
    """A query with every key blocked gets zero weights and a zero output (as SDPA)"""
    q, k, v = qkv(device, dtype, (2,), 4, 5, 8, 6)
    mask = torch.rand(2, 4, 5, device=device) > 0.4
    mask = with_one_key(mask)
    mask[0, 1] = False  # query 1 of batch element 0 may look at nothing
    mask[1, 3] = False  # nor query 3 of batch element 1
    check_pair(student, q, k, v, mask,
               "a mask (2, 4, 5) that blocks every key of query 1 in batch element 0 and of query 3 in batch "
               "element 1 (SDPA gives those queries zero weights and a zero output)")
    # A padding mask with a batch element that is all padding.
    pad = torch.tensor([[True, True, False, False, False], [False] * 5], device=device)[:, None, :]
    check_pair(student, q, k, v, pad, "a padding mask (2, 1, 5) whose batch element 1 is all padding")


def test_very_negative_scores(student, device, dtype):
    """Blocked keys get weight 0 even where every allowed score is hugely negative (below -1e35)"""
    # q . k of order -1e36 (float32 holds it): a blocked score filled with any larger finite number, -1e9 or
    # -1e30, is then the row's maximum and takes the weight. -inf, or finfo(dtype).min, stays below. The
    # allowed scores of a row are far apart, so each row's weights are one-hot on its largest allowed
    # score, exactly, by any algorithm (max-subtraction or logsumexp).
    g = torch.Generator().manual_seed(7)
    q = (torch.rand(2, 4, 4, generator=g, dtype=dtype) + 0.5) * 1e18
    k = -(torch.rand(2, 5, 4, generator=g, dtype=dtype) + 0.5) * 1e18
    v = torch.randn(2, 5, 3, generator=g, dtype=dtype)
    mask = with_one_key(torch.rand(2, 4, 5, generator=g) > 0.5)
    q, k, v, mask = (t.to(device) for t in (q, k, v, mask))
    context = ("q (2, 4, 4) and k (2, 5, 4) of magnitude 1e18, so every score is about -1e36, "
               "a mask (2, 4, 5) with at least one allowed key per query")
    out, weights = call(student, q, k, v, mask, context)
    # Any finite fill above -1e36 (0 included) gives the same weights here: FILL_ABOVE_SCORES speaks for them all.
    classic = {m: model for m, model in mistakes_for(q, k, v, mask, part=1).items() if m.id != ZERO_FILL.id}
    finite = {FILL_ABOVE_SCORES: lambda: attend(q, k, v, mask, fill=-1e30, empty="uniform")[1],
              Mistake(FILL_ABOVE_SCORES.id, FILL_ABOVE_SCORES.explanation + " (yours then zeroes the blocked "
                      "weights, leaving those rows empty)"): lambda: attend(q, k, v, mask, fill=-1e30)[1]}
    assert_close(weights, sdpa_weights(q, k, mask), name="weights", what="SDPA's attention weights",
                 context=context, mistakes={**classic, **finite})
    assert_close(out, sdpa(q, k, v, mask), what="F.scaled_dot_product_attention", context=context,
                 mistakes=mistakes_for(q, k, v, mask, part=0))


HALF_TOLERANCE = {  # (rtol, atol): half-precision rounding of the scores and the weights, not a looser truth
    torch.float16: (5e-3, 5e-3),
    torch.bfloat16: (3e-2, 3e-2),
}


@pytest.mark.dtypes(cpu=(torch.float16, torch.bfloat16), cuda=(torch.float16, torch.bfloat16))
def test_half_precision(student, device, dtype):
    """Half-precision forward with a mask matches SDPA"""
    q, k, v = qkv(device, torch.float32, (2,), 5, 6, 8, 8)
    q, k, v = (t.to(dtype) for t in (q, k, v))
    mask = with_one_key(torch.rand(2, 5, 6, device=device) > 0.5)
    rtol, atol = HALF_TOLERANCE[dtype]
    context = f"q {describe(q)}, a mask (2, 5, 6)"
    out, weights = call(student, q, k, v, mask, context)
    # The truth in float32 from the same (rounded) inputs, then rounded once.
    q32, k32, v32 = (t.float() for t in (q, k, v))
    assert_close(out, sdpa(q32, k32, v32, mask).to(dtype), what="SDPA (computed in float32)", context=context,
                 rtol=rtol, atol=atol, mistakes=mistakes_for(q32, k32, v32, mask, part=0))
    assert_close(weights, sdpa_weights(q32, k32, mask).to(dtype), name="weights",
                 what="SDPA's weights (computed in float32)", context=context, rtol=rtol, atol=atol,
                 mistakes=mistakes_for(q32, k32, v32, mask, part=1))


@st.composite
def attention_inputs(draw):
    lead = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2), label="batch dims"))
    q_len, k_len = draw(st.integers(1, 5), label="q_len"), draw(st.integers(1, 5), label="k_len")
    d_k, d_v = draw(st.integers(1, 6), label="d_k"), draw(st.integers(1, 6), label="d_v")
    kind = draw(st.sampled_from(["none", "padding", "causal", "full"]), label="mask")
    seed = draw(st.integers(0, 2**31 - 1), label="seed")
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(*lead, *s, generator=g, dtype=torch.float64) for s in
               ((q_len, d_k), (k_len, d_k), (k_len, d_v)))
    mask = {
        "none": lambda: None,
        "padding": lambda: with_one_key(torch.rand(*lead, 1, k_len, generator=g) > 0.5),
        "causal": lambda: torch.ones(q_len, k_len, dtype=torch.bool).tril(max(0, k_len - q_len)),
        "full": lambda: with_one_key(torch.rand(*lead, q_len, k_len, generator=g) > 0.5),
    }[kind]()
    return q, k, v, mask


@given(inputs=attention_inputs())
def test_any_shape(student, inputs):
    """Any shape matches SDPA: extra batch dims, lengths 1, q_len != k_len, d_k != d_v"""
    q, k, v, mask = inputs
    where = f"q {describe(q)}, k {describe(k)}, v {describe(v)}, mask {describe(mask) if mask is not None else None}"
    check_pair(student, q, k, v, mask, where)


def test_gradients_match_sdpa(student, device, dtype):
    """Gradients of q, k and v equal SDPA's"""
    q, k, v = qkv(device, dtype, (2,), 4, 5, 6, 3)
    mask = with_one_key(torch.rand(2, 1, 5, device=device) > 0.4)
    g = torch.randn(2, 4, 3, device=device, dtype=dtype)
    mine = [t.clone().requires_grad_(True) for t in (q, k, v)]
    theirs = [t.clone().requires_grad_(True) for t in (q, k, v)]
    context = "q (2, 4, 6), k (2, 5, 6), v (2, 5, 3), a padding mask (2, 1, 5)"
    out, _ = call(student, *mine, mask, context)
    # The gradients of a wrong forward are wrong too: say what is wrong with the forward first.
    assert_close(out, sdpa(q, k, v, mask), what="F.scaled_dot_product_attention", context=context,
                 mistakes=mistakes_for(q, k, v, mask, part=0))
    if not out.requires_grad:
        fail("the output is not connected to q, k and v through autograd (detach(), .data or a new tensor "
             "built from numbers cut the graph)")
    (out * g).sum().backward()
    (sdpa(*theirs, mask) * g).sum().backward()
    check_gradients_equal({n: a.grad for n, a in zip("qkv", mine, strict=True)},
                          {n: b.grad for n, b in zip("qkv", theirs, strict=True)}, what="SDPA's gradient",
                          context=context + ", loss (output * g).sum()")


def test_gradcheck(student):
    """gradcheck passes in float64"""
    q = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    k = torch.randn(2, 4, 4, dtype=torch.float64, requires_grad=True)
    v = torch.randn(2, 4, 3, dtype=torch.float64, requires_grad=True)
    mask = torch.ones(3, 4, dtype=torch.bool).tril(1)
    gradcheck(lambda *t: call(student, *t, mask)[0], (q, k, v),
              context="q (2, 3, 4), k (2, 4, 4), v (2, 4, 3), a causal mask (3, 4)")


def test_inputs_not_modified(student, device):
    """q, k, v and the mask are left unchanged"""
    q, k, v = qkv(device, torch.float32, (2,), 4, 5, 6, 3, scale=10.0)
    mask = with_one_key(torch.rand(2, 4, 5, device=device) > 0.5)
    check_inputs_unchanged(lambda: call(student, q, k, v, mask),
                           {"q": q, "k": k, "v": v, "the mask": mask},
                           hint="use ~mask or mask.logical_not(), which make a new tensor, not mask.logical_not_()")


def test_new_tensors_follow_the_inputs(student):
    """Tensors the attention creates are made on the inputs' device (seen on torch's meta device, on every machine)"""
    q, k, v = (torch.empty(2, 4, 8, device="meta"), torch.empty(2, 5, 8, device="meta"),
               torch.empty(2, 5, 6, device="meta"))
    mask = torch.empty(2, 4, 5, dtype=torch.bool, device="meta")
    check_follows_the_device(lambda: call(student, q, k, v, mask)[0],
                             "scaled_dot_product_attention on q, k, v and a mask on the meta device")


# ---- AttentionHead ---------------------------------------------------------------------------------------

D_MODEL, D_HEAD = 12, 4


def head_state(device, dtype, d_model=D_MODEL, d_head=D_HEAD) -> dict:
    """Weights for a head, drawn here (not the student's initialisation)."""
    state = {}
    for name in ("w_q", "w_k", "w_v"):
        state[f"{name}.weight"] = torch.randn(d_head, d_model, device=device, dtype=dtype) / math.sqrt(d_model) * 2
        state[f"{name}.bias"] = torch.randn(d_head, device=device, dtype=dtype) * 0.2
    return state


def hand_head(state, x, context=None, mask=None, *, scale=None, kv_from_x=False, q_from_context=False):
    """A head built by hand from `state` with F.linear and SDPA (or a mistake's variant): (out, weights)."""
    c = x if context is None else context
    q_in = c if q_from_context else x
    kv_in = x if kv_from_x else c
    q = F.linear(q_in, state["w_q.weight"], state["w_q.bias"])
    k = F.linear(kv_in, state["w_k.weight"], state["w_k.bias"])
    v = F.linear(kv_in, state["w_v.weight"], state["w_v.bias"])
    if scale is not None:
        return attend(q, k, v, mask, scale=scale)
    return sdpa(q, k, v, mask), sdpa_weights(q, k, mask)


def make_head(student, device, dtype, state=None, d_model=D_MODEL, d_head=D_HEAD):
    """The student's head with `state` loaded strictly."""
    head = student.AttentionHead(d_model, d_head)
    if not remote.is_a(head, "Module"):
        fail(f"AttentionHead(...) should be an nn.Module, got {remote.type_name(head)}")
    head = head.to(device=device, dtype=dtype)
    state = head_state(device, dtype, d_model, d_head) if state is None else state
    def mismatch(_):
        got = {name: tuple(p.shape) for name, p in head.state_dict().items()}
        want = {name: tuple(t.shape) for name, t in state.items()}
        fail(f"AttentionHead({d_model}, {d_head}) should hold exactly the parameters {want} "
             f"(three nn.Linear(d_model, d_head) named w_q, w_k, w_v), got {got}", *bias_missing(got, state))
    load_state(head, state, mismatch)
    head.eval()
    return head, state


def head_mistakes(state, x, context=None, mask=None, *, part=0) -> dict:
    """The head's own classic mistakes, and those of the attention function it calls."""
    d_model, d_head = x.size(-1), state["w_q.weight"].size(0)
    c = x if context is None else context
    q = F.linear(x, state["w_q.weight"], state["w_q.bias"])
    k = F.linear(c, state["w_k.weight"], state["w_k.bias"])
    v = F.linear(c, state["w_v.weight"], state["w_v.bias"])
    found = mistakes_for(q, k, v, mask, part=part)
    found |= {
        NO_SCALE: lambda: hand_head(state, x, context, mask, scale=1.0)[part],
        SCALE_BY_D_MODEL: lambda: hand_head(state, x, context, mask, scale=1 / math.sqrt(d_model))[part],
        SCALE_BY_D_K: lambda: hand_head(state, x, context, mask, scale=1 / d_head)[part],
    }
    if mask is not None:
        found[HEAD_MASK_IGNORED] = lambda: hand_head(state, x, context, None)[part]
    if context is not None:
        found[CONTEXT_IGNORED] = lambda: hand_head(state, x, context, mask, kv_from_x=True)[part]
        found[QUERIES_FROM_CONTEXT] = lambda: hand_head(state, x, context, mask, q_from_context=True)[part]
    return found


def head_at_fault(head, state, x, context, mask) -> tuple[Mistake, ...]:
    """Where the head went wrong: a projection that read x where context was due (or the reverse), seen by hooks
    on w_q, w_k and w_v in one more forward; else, weights (attn_weights) equal to those of a head built by hand
    put the fault after the softmax. (Wrong weights say nothing here: the projections or the mask passed on may
    be at fault as much as the attention function, which has checks of its own.)"""
    found = projection_inputs_at_fault(head, x, context, mask)
    if found:
        return found
    weights = getattr(head, "attn_weights", None)
    right = hand_head(state, x, context, mask)[1]
    return (FAULT_AFTER_SOFTMAX,) if isinstance(weights, torch.Tensor) and is_close(weights, right) else ()


def projection_inputs_at_fault(head, x, context, mask) -> tuple[Mistake, ...]:
    """The projections that read x where context was due, or context where x was (cross-attention only: in
    self-attention both are x). Nothing where a projection was not called exactly once through its module, or
    read something that is neither."""
    if context is None or (context.shape == x.shape and torch.equal(context, x)):
        return ()
    names = ("w_q", "w_k", "w_v")
    with recorded(head, names) as calls:
        head(x, context=context, mask=mask)
    each = once_each(calls, names)
    if each is None:
        return ()
    found = []
    for name, due, other, due_name, other_name in (("w_q", x, context, "x", "context"),
                                                   ("w_k", context, x, "context", "x"),
                                                   ("w_v", context, x, "context", "x")):
        given = each[name].args[0] if each[name].args else None
        if isinstance(given, torch.Tensor) and not is_close(given, due) and is_close(given, other):
            found.append(Mistake(FAULT_IN_PROJECTION_INPUT.id, f"{FAULT_IN_PROJECTION_INPUT.explanation}: yours "
                                 f"applies {name} to {other_name}, not to {due_name}"))
    return tuple(found)


def check_head(head, state, x, context, mask, where):
    out = head(x, context=context, mask=mask) if context is not None else head(x, mask=mask)
    expected, expected_weights = hand_head(state, x, context, mask)
    assert_close(out, expected, what="a head built from the same weights with nn.functional.linear and SDPA",
                 context=where, mistakes=head_mistakes(state, x, context, mask),
                 localise=lambda: head_at_fault(head, state, x, context, mask))
    return expected_weights


def test_head_parameters(student):
    """AttentionHead has three nn.Linear(d_model, d_head) projections w_q, w_k, w_v"""
    head = student.AttentionHead(10, 6)
    for name in ("w_q", "w_k", "w_v"):
        layer = getattr(head, name, None)
        if not remote.is_a(layer, "Linear"):
            fail(f"AttentionHead(10, 6).{name} should be an nn.Linear(10, 6), got {remote.type_name(layer)}")
        if (layer.in_features, layer.out_features, layer.bias is not None) != (10, 6, True):
            fail(f"AttentionHead(10, 6).{name} should be nn.Linear(10, 6) with a bias, got {layer}")
    count = sum(p.numel() for p in head.parameters())
    if count != 3 * (10 * 6 + 6):
        fail(f"AttentionHead(10, 6) should have 3 * (10 * 6 + 6) = {3 * 66} parameters, got {count}")


@pytest.mark.critical
def test_head_self_attention(student, device, dtype):
    """AttentionHead self-attention equals a head built by hand with the same weights"""
    head, state = make_head(student, device, dtype)
    x = torch.randn(3, 5, D_MODEL, device=device, dtype=dtype)
    check_head(head, state, x, None, None, f"x {describe(x)}, no mask, d_head {D_HEAD}")
    check_head(head, state, x, None, causal(5, 5, device), f"x {describe(x)}, a causal mask (5, 5)")
    pad = with_one_key(torch.rand(3, 1, 5, device=device) > 0.5)
    check_head(head, state, x, None, pad, f"x {describe(x)}, a padding mask (3, 1, 5)")


@pytest.mark.critical
def test_head_cross_attention(student, device, dtype):
    """AttentionHead cross-attention (context) equals a head built by hand"""
    head, state = make_head(student, device, dtype)
    x = torch.randn(3, 4, D_MODEL, device=device, dtype=dtype)
    memory = torch.randn(3, 6, D_MODEL, device=device, dtype=dtype)
    where = f"x {describe(x)}, context {describe(memory)}"
    # First a context as long as x: a projection fed the wrong one gives wrong values there, not a shape error.
    same = torch.randn(3, 4, D_MODEL, device=device, dtype=dtype)
    check_head(head, state, x, same, None, f"x {describe(x)}, context {describe(same)} (as long as x), no mask")
    check_head(head, state, x, memory, None, where + ", no mask")
    pad = torch.tensor([[True] * 6, [True] * 3 + [False] * 3, [True] + [False] * 5], device=device)[:, None, :]
    check_head(head, state, x, memory, pad, where + ", a padding mask (3, 1, 6) on the context")


def test_head_attn_weights(student, device):
    """AttentionHead keeps the last weights in attn_weights, (batch, q_len, k_len)"""
    head, state = make_head(student, device, torch.float32)
    x = torch.randn(2, 3, D_MODEL, device=device)
    memory = torch.randn(2, 5, D_MODEL, device=device)
    head(memory)  # an earlier call: attn_weights must describe the LAST one
    check_head(head, state, x, memory, None, "x (2, 3, d_model), context (2, 5, d_model), no mask")
    mask = with_one_key(torch.rand(2, 1, 5, device=device) > 0.5)
    expected = check_head(head, state, x, memory, mask, "x (2, 3, d_model), context (2, 5, d_model)")
    weights = getattr(head, "attn_weights", None)
    if not isinstance(weights, torch.Tensor):
        fail("after forward, AttentionHead.attn_weights should hold the attention weights of that call "
             f"(batch, q_len, k_len), got {remote.type_name(weights)}")
    assert_close(weights, expected, name="attn_weights", what="the weights of the last forward",
                 context="x (2, 3, d_model), context (2, 5, d_model), a padding mask (2, 1, 5)",
                 mistakes=head_mistakes(state, x, memory, mask, part=1))


def test_head_gradients(student, reference, device, dtype):
    """AttentionHead's gradients equal the reference head's (inputs and weights)"""
    head, state = make_head(student, device, dtype)
    ref = reference.AttentionHead(D_MODEL, D_HEAD).to(device=device, dtype=dtype)
    ref.load_state_dict(state, strict=True)
    x = torch.randn(2, 3, D_MODEL, device=device, dtype=dtype)
    memory = torch.randn(2, 4, D_MODEL, device=device, dtype=dtype)
    mask = with_one_key(torch.rand(2, 1, 4, device=device) > 0.4)
    g = torch.randn(2, 3, D_HEAD, device=device, dtype=dtype)
    check_head(head, state, x, memory, None, "x (2, 3, d_model), context (2, 4, d_model), no mask")
    context = "x (2, 3, d_model), context (2, 4, d_model), a padding mask (2, 1, 4)"
    inputs = {}
    for who, module in (("student", head), ("reference", ref)):
        xi, mi = x.clone().requires_grad_(True), memory.clone().requires_grad_(True)
        out = module(xi, context=mi, mask=mask)
        if who == "student":
            # The gradients of a wrong forward are wrong too: say what is wrong with the forward first.
            assert_close(out, hand_head(state, x, memory, mask)[0], what="a head built from the same weights",
                         context=context, mistakes=head_mistakes(state, x, memory, mask))
            if not out.requires_grad:
                fail("the head's output is not connected to its inputs and weights through autograd")
        (out * g).sum().backward()
        inputs[who] = (xi.grad, mi.grad)
    context += ", loss (output * g).sum()"
    for i, name in enumerate(("x", "context")):
        if inputs["student"][i] is None:
            fail(f"no gradient reached {name}: the output does not depend on it through autograd")
        assert_close(inputs["student"][i], inputs["reference"][i], name=f"gradient of {name}",
                     what="the reference head's", context=context)
    ref_params = dict(ref.named_parameters())
    for name, p in head.named_parameters():
        if p.grad is None:
            fail(f"no gradient reached {name}: it is not used in the forward")
        assert_close(p.grad, ref_params[name].grad, name=f"gradient of {name}", what="the reference head's",
                     context=context)
