"""Planted mistake: the variance is centred, but x itself is divided without subtracting the mean."""
# expect: mean-not-subtracted


def layer_norm(x, gamma, beta, eps=1e-5):
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    return gamma * x / torch.sqrt(var + eps) + beta
