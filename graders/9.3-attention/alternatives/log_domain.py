"""Alternative: weights as exp(scores - logsumexp(scores)) over the keys, blocked keys dropped with where."""


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.mT / math.sqrt(k.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    log_weights = scores - torch.logsumexp(scores, dim=-1, keepdim=True)
    weights = torch.exp(log_weights)
    if mask is not None:
        weights = torch.where(mask, weights, 0.0)
    return weights @ v, weights
