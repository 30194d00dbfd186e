"""Alternative: mask and scores expanded to one shape (torch.broadcast_shapes), empty rows kept finite with where."""


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))  # (..., q_len, k_len)
    if mask is None:
        weights = softmax(scores, dim=-1)
        return weights @ v, weights
    shape = torch.broadcast_shapes(scores.shape, mask.shape)  # (torch imports sympy on its first call)
    mask = mask.expand(shape)
    scores = torch.where(mask, scores.expand(shape), float("-inf"))
    some_key = mask.any(dim=-1, keepdim=True)  # False for a query whose keys are all blocked
    weights = softmax(torch.where(some_key, scores, 0.0), dim=-1)  # never a row of only -inf: no NaN
    weights = torch.where(mask, weights, 0.0)  # blocked keys (and so every key of an empty row) get 0
    return weights @ v, weights
