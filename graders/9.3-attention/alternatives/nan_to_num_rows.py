"""Alternative: -inf fill, then the NaN rows of fully blocked queries turned into zeros with nan_to_num."""


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-1, -2)) * q.size(-1) ** -0.5
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), -math.inf)
    weights = softmax(scores, dim=-1).nan_to_num(0.0)
    return torch.matmul(weights, v), weights
