"""Planted mistake: eps defaults to 1e-6 (a value some other libraries use), not the contract's 1e-5."""
# expect: wrong-default-eps


def layer_norm(x, gamma, beta, eps=1e-6):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


class LayerNorm(LayerNorm):
    def __init__(self, d_model, eps=1e-6):
        super().__init__(d_model, eps)
