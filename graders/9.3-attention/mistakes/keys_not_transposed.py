"""Planted mistake: q @ k, the keys never transposed (q k^T needs k.transpose(-2, -1))."""
# expect: keys-not-transposed
# also: fault-in-weights


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights
