"""Planted mistake: scale q in place (q /= sqrt(d_k)) to save a tensor: the caller's queries change."""
# expect: modifies-input


def scaled_dot_product_attention(q, k, v, mask=None):
    q /= math.sqrt(q.size(-1))  # in place: overwrites the caller's tensor
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights
