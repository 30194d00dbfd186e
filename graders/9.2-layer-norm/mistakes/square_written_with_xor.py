"""Planted mistake: the variance squares with ^ (exclusive or in Python), not **."""
# expect: bit-operator-on-floats


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    centred = x - mean
    var = (centred ^ 2).mean(dim=-1, keepdim=True)
    return gamma * centred / torch.sqrt(var + eps) + beta
