"""Planted mistake: gamma and beta kept as plain tensors, not nn.Parameter (not trained, not saved)."""
# expect: not-parameters


class LayerNorm(LayerNorm):
    def __init__(self, d_model, eps=1e-5):
        nn.Module.__init__(self)
        self.eps = eps
        self.gamma = torch.ones(d_model)
        self.beta = torch.zeros(d_model)
