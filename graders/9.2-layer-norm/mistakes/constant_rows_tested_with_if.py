"""Planted mistake: constant rows special-cased with `if var == 0:`, a question about every row at once."""
# expect: tensor-as-truth-value


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    centred = x - mean
    var = (centred**2).mean(dim=-1, keepdim=True)
    if var == 0:  # a constant row: nothing to scale
        return beta.expand_as(x)
    return gamma * centred / torch.sqrt(var + eps) + beta
