"""Planted mistake: var = mean(x²) - mean(x)², which cancels catastrophically far from zero."""
# expect: one-pass-variance


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = (x * x).sum(dim=-1, keepdim=True) / x.shape[-1] - mean * mean
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta
