"""Planted mistake: the mean's sum divided by d - 1 (the variance then computed from that centring)."""
# expect: fault-in-centring


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.sum(dim=-1, keepdim=True) / (x.shape[-1] - 1)
    centred = x - mean
    var = (centred**2).mean(dim=-1, keepdim=True)
    return gamma * centred / torch.sqrt(var + eps) + beta
