"""Gets the biased standard deviation as the vector norm of the centred features over sqrt(d)."""

import math

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
    d = x.shape[-1]
    centred = x - x.mean(dim=-1, keepdim=True)
    # ||x - mu|| / sqrt(d) is the biased standard deviation; square it to put eps under the root
    sigma = torch.linalg.vector_norm(centred, ord=2, dim=-1, keepdim=True) / math.sqrt(d)
    x_hat = centred / torch.sqrt(sigma**2 + eps)
    return gamma * x_hat + beta


class LayerNorm(nn.Module):
    """Layer normalisation with a learned gain `gamma` and shift `beta`, one per feature.

    Args:
        d_model: the size of the last dimension, the one normalised over.
        eps:     added to the variance inside the square root.
    """

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_model) -> (..., d_model), normalised over the last dimension."""
        return layer_norm(x, self.gamma, self.beta, eps=self.eps)
