"""Flattens x to (positions, d_model) rows, normalises the rows with a helper returning the statistics, and reshapes back."""

import torch
from torch import nn


def _row_stats(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and biased variance of each row of a 2-d tensor, both (n, 1)."""
    n_feat = rows.size(1)
    mean = rows.sum(dim=1, keepdim=True) / n_feat
    var = ((rows - mean) ** 2).sum(dim=1, keepdim=True) / n_feat
    return mean, var


def layer_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    shape = x.shape
    rows = x.reshape(-1, shape[-1])
    mean, var = _row_stats(rows)
    normed = (rows - mean) * torch.rsqrt(var + eps)
    out = normed * gamma.view(1, -1) + beta.view(1, -1)
    assert out.shape == rows.shape
    return out.reshape(shape)


class LayerNorm(nn.Module):
    gamma: nn.Parameter
    beta: nn.Parameter

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = float(eps)
        self.gamma = nn.Parameter(torch.full((d_model,), 1.0))
        self.beta = nn.Parameter(torch.full((d_model,), 0.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.shape[-1] == self.gamma.shape[0], "last dim must be d_model"
        return layer_norm(x, self.gamma, self.beta, self.eps)
