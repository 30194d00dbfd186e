"""Planted mistake: the scores multiplied by sqrt(d_k) instead of divided; no classic mistake models it, the
weights it returns show the fault is before the weighted sum."""
# expect: fault-in-weights


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) * math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights
