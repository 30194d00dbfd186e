"""Planted mistake: `if mask:` where `if mask is not None:` was meant."""
# expect: tensor-as-truth-value


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    if mask:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    if mask:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights
