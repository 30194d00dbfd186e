"""Alternative: einsum products, q scaled first, blocked scores set to finfo.min with torch.where, then zeroed."""


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q / math.sqrt(q.shape[-1]), k)
    if mask is not None:
        scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
    weights = softmax(scores, dim=-1)
    if mask is not None:
        weights = torch.where(mask, weights, torch.zeros_like(weights))
    return torch.einsum("...qk,...kd->...qd", weights, v), weights
