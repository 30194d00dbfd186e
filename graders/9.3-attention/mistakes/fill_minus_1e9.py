"""Planted mistake: the Annotated Transformer's fill, -1e9, which float16 cannot hold."""
# expect: mask-fill-overflows-half
# also: finite-mask-fill finite-fill-above-scores


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    weights = softmax(scores, dim=-1)
    return weights @ v, weights
