"""Planted mistake: the unbiased variance (divide by d - 1), torch.var's default."""
# expect: unbiased-variance


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta
