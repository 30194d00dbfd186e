"""Planted mistake: -inf fill, but a query with every key blocked is left as softmax's NaN."""
# expect: nan-on-fully-masked-row


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return weights @ v, weights
