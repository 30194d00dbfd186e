"""Stores gamma and beta as plain tensors, not nn.Parameter, so they are not trained or saved."""

import torch
from torch import nn


def layer_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


class LayerNorm(nn.Module):
    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.gamma = torch.ones(d_model)
        self.beta = torch.zeros(d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layer_norm(x, self.gamma.to(x.device), self.beta.to(x.device), self.eps)
