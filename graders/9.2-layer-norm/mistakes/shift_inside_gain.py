"""Planted mistake: beta added before the gain, gamma * (x_hat + beta)."""
# expect: fault-in-affine


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return gamma * ((x - mean) / torch.sqrt(var + eps) + beta)
