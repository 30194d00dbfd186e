"""Planted mistake: -1e4 for the blocked scores (it fits float16), with fully blocked rows zeroed afterwards (so
they pass): the fill still beats allowed scores that are lower than -1e4."""
# expect: finite-fill-above-scores


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, -1e4)
    weights = softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights
