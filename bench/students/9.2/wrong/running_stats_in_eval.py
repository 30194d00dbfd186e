"""Keeps running mean/variance in training and uses them in eval mode, as batch norm does."""

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
    var = x.var(dim=-1, unbiased=False, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


class LayerNorm(nn.Module):
    """Layer normalisation with a learned gain `gamma` and shift `beta`, one per feature."""

    def __init__(self, d_model: int, eps: float = 1e-5, momentum: float = 0.1):
        super().__init__()
        self.eps = eps
        self.momentum = momentum
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))
        # statistics for inference, so that eval does not depend on the input's own statistics
        self.running_mean = 0.0
        self.running_var = 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_model) -> (..., d_model), normalised over the last dimension."""
        if self.training:
            with torch.no_grad():
                m = self.momentum
                self.running_mean = (1 - m) * self.running_mean + m * x.mean().item()
                self.running_var = (1 - m) * self.running_var + m * x.var(dim=-1, unbiased=False).mean().item()
            return layer_norm(x, self.gamma, self.beta, self.eps)
        x_hat = (x - self.running_mean) / (self.running_var + self.eps) ** 0.5
        return self.gamma * x_hat + self.beta
