"""Planted mistake: divide by the plain standard deviation, eps never used."""
# expect: eps-ignored


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    std = x.std(dim=-1, keepdim=True, unbiased=False)
    return gamma * (x - mean) / std + beta
