"""Planted mistake: beta starts at ones (the gamma line copied), gamma rightly at ones. It is not a swap of the two,
so it must not be called one: the initialisation check fails with no diagnosis."""
# expect: failed


class LayerNorm(LayerNorm):
    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__(d_model, eps)
        self.beta = nn.Parameter(torch.ones(d_model))
