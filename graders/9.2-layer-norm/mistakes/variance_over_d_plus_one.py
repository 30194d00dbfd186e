"""Planted mistake: the variance's sum divided by d + 1 (an off-by-one the other way from d - 1)."""
# expect: fault-in-scale


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    centred = x - mean
    var = (centred**2).sum(dim=-1, keepdim=True) / (x.shape[-1] + 1)
    return gamma * centred / torch.sqrt(var + eps) + beta
