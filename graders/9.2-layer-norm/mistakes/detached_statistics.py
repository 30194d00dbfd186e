"""Planted mistake: the statistics are computed without autograd (right forward, wrong gradients)."""
# expect: detached-statistics


def layer_norm(x, gamma, beta, eps=1e-5):
    with torch.no_grad():
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta
