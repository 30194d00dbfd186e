"""Planted mistake: the mask multiplied into the scores, so blocked scores are 0, an ordinary score."""
# expect: mask-fill-zero
# also: finite-fill-above-scores


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores * mask
    weights = softmax(scores, dim=-1)
    return weights @ v, weights
