"""Reduces without keepdim and indexes with [..., None], chains .sub().div().mul().add(); adds extra_repr."""

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
    mean = x.mean(-1)[..., None]
    var = x.var(-1, correction=0)[..., None]  # biased: divide by d
    return x.sub(mean).div(var.add(eps).sqrt()).mul(gamma).add(beta)


class LayerNorm(nn.Module):
    """Layer normalisation with a learned gain `gamma` and shift `beta`, one per feature."""

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.normalized_features = d_model
        self.eps = eps
        self.gamma = nn.Parameter(torch.full((d_model,), 1.0))
        self.beta = nn.Parameter(torch.full((d_model,), 0.0))

    def extra_repr(self):
        return f"{self.normalized_features}, eps={self.eps}"

    def forward(self, x):
        """(..., d_model) -> (..., d_model), normalised over the last dimension."""
        if x.shape[-1] != self.normalized_features:
            raise ValueError(f"expected last dim {self.normalized_features}, got {x.shape[-1]}")
        return layer_norm(x, self.gamma, self.beta, self.eps)
