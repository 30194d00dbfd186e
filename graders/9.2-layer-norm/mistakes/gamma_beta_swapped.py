"""Planted mistake: beta multiplies the normalised vector and gamma is added."""
# expect: gamma-beta-swapped


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return beta * (x - mean) / torch.sqrt(var + eps) + gamma
