"""Alternative: the module computes the norm itself (Tensor.var(unbiased=False)), registering its parameters."""


class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.register_parameter("gamma", nn.Parameter(torch.ones(d_model)))
        self.register_parameter("beta", nn.Parameter(torch.zeros(d_model)))

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, unbiased=False, keepdim=True)
        return self.gamma * (x - mean) / (var + self.eps) ** 0.5 + self.beta
