"""Registers gamma and beta with register_parameter and recomputes the formula inline in forward."""

import torch
from torch import nn


def layer_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    d = x.shape[-1]
    mean = x.sum(dim=-1, keepdim=True) / d
    diff = x - mean
    var = (diff * diff).sum(dim=-1, keepdim=True) / d
    return gamma * (diff / (var + eps).sqrt()) + beta


class LayerNorm(nn.Module):
    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.register_parameter("gamma", nn.Parameter(torch.ones(d_model)))
        self.register_parameter("beta", nn.Parameter(torch.zeros(d_model)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta
