"""Planted mistake: centre x in place (x -= mean) to save memory: the caller's tensor changes."""
# expect: modifies-input


def layer_norm(x, gamma, beta, eps=1e-5):
    x -= x.mean(dim=-1, keepdim=True)
    var = (x**2).mean(dim=-1, keepdim=True)
    return gamma * x / torch.sqrt(var + eps) + beta
