"""Planted mistake: the weighted average of the values taken as a mean over the keys (it divides by k_len once
more); the weights are right, so the fault is after the softmax."""
# expect: fault-in-weighted-sum


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    output = (weights.unsqueeze(-1) * v.unsqueeze(-3)).mean(dim=-2)  # (..., q_len, k_len, d_v) -> (..., q_len, d_v)
    return output, weights
