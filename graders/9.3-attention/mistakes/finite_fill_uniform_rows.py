"""Planted mistake: fill with the dtype's most negative number (fits every dtype), but a fully blocked
row is then a row of equal scores: it averages every value instead of giving 0."""
# expect: finite-mask-fill


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = softmax(scores, dim=-1)
    return weights @ v, weights
