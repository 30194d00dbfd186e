"""Planted mistake: the mean loses its dimension, so it broadcasts against the wrong axis (or not at all)."""
# expect: no-keepdim


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1)
    var = ((x - mean) ** 2).mean(dim=-1)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta
