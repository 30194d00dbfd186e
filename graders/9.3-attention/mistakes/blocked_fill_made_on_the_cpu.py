"""Planted mistake: the blocked scores replaced by torch.where with a -inf tensor made by torch.full(shape), on the
default device (the CPU): right on the CPU, a device mismatch on a GPU."""
# expect: tensor-on-default-device


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = torch.where(mask, scores, torch.full(scores.shape, float("-inf"), dtype=scores.dtype))
    weights = softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights
