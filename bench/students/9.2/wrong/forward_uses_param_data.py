"""LayerNorm.forward passes self.gamma.data and self.beta.data "to skip autograd", so they never get a gradient."""

import torch
from torch import nn


def layer_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Layer normalisation of `x` over its last dimension: gamma * (x - mean) / sqrt(var + eps) + beta.

    Args:
        x:     (..., d_model), e.g. (batch, seq, d_model) activations.
        gamma: (d_model,) gain, multiplies the normalised vector.
        beta:  (d_model,) shift, added after the gain.
        eps:   added to the (biased) variance, inside the square root.

    Returns:
        (..., d_model), with x's dtype and device.
    """
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, correction=0)
    x_hat = (x - mean) * torch.rsqrt(var + eps)
    return x_hat * gamma + beta


class LayerNorm(nn.Module):
    """Layer normalisation with a learned gain `gamma` and shift `beta`, one per feature."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_model) -> (..., d_model), normalised over the last dimension."""
        # .data: plain tensors, no autograd bookkeeping for the affine part
        return layer_norm(x, self.gamma.data, self.beta.data, self.eps)
