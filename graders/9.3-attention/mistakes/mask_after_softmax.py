"""Planted mistake: zero the blocked weights after the softmax, without renormalising."""
# expect: mask-after-softmax


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    weights = softmax(scores, dim=-1)
    if mask is not None:
        weights = weights * mask
    return weights @ v, weights
