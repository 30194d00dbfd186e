"""Planted mistake: eps added to the standard deviation, outside the square root."""
# expect: eps-outside-root


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    std = ((x - mean) ** 2).mean(dim=-1, keepdim=True).sqrt()
    return gamma * (x - mean) / (std + eps) + beta
