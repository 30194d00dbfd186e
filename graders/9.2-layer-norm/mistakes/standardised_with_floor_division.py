"""Planted mistake: x_hat divides with //, floor division (no gradient, and floored)."""
# expect: floor-division-in-backward


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return gamma * ((x - mean) // torch.sqrt(var + eps)) + beta
