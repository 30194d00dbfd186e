"""Planted mistake: the blocked positions computed as 1 - mask, arithmetic torch refuses on a bool mask."""
# expect: arithmetic-on-bool-mask


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(1 - mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(1 - mask, 0.0)
    return weights @ v, weights
