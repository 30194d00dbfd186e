"""Planted mistake: divide by the variance instead of the standard deviation."""
# expect: no-square-root


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return gamma * (x - mean) / (var + eps) + beta
