"""Computes the mean and variance with a matrix product against a vector of 1/d, printing nothing."""

import torch
from torch import nn


def layer_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    d = x.size(-1)
    avg = torch.full((d, 1), 1.0 / d, dtype=x.dtype, device=x.device)
    mean = x @ avg  # (..., 1)
    centred = x - mean
    var = (centred * centred) @ avg  # (..., 1)
    return gamma * centred / torch.sqrt(var + eps) + beta


class LayerNorm(nn.Module):
    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layer_norm(x, self.gamma, self.beta, self.eps)
