"""Planted mistake: k^T written k.transpose(1, 2), right for (batch, len, d_k) but not once heads come first."""
# expect: keys-not-transposed


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(1, 2) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights
