"""Implements layer norm as a torch.autograd.Function with the backward for x, gamma and beta derived by hand."""

import torch
from torch import nn


class _LayerNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, gamma, beta, eps):
        mu = x.mean(dim=-1, keepdim=True)
        xc = x - mu
        var = (xc * xc).mean(dim=-1, keepdim=True)
        inv_std = 1.0 / torch.sqrt(var + eps)
        x_hat = xc * inv_std
        ctx.save_for_backward(x_hat, inv_std, gamma)
        return x_hat * gamma + beta

    @staticmethod
    def backward(ctx, dy):
        x_hat, inv_std, gamma = ctx.saved_tensors
        d = dy.shape[-1]
        # sum over every position: flatten the leading dimensions into one (works for 1-d x too)
        d_gamma = (dy * x_hat).reshape(-1, d).sum(dim=0)
        d_beta = dy.reshape(-1, d).sum(dim=0)
        g = dy * gamma  # gradient w.r.t. x_hat
        # dx = inv_std * (g - mean(g) - x_hat * mean(g * x_hat))
        dx = inv_std * (g - g.mean(dim=-1, keepdim=True) - x_hat * (g * x_hat).mean(dim=-1, keepdim=True))
        return dx, d_gamma, d_beta, None


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
    return _LayerNormFn.apply(x, gamma, beta, eps)


class LayerNorm(nn.Module):
    """Layer normalisation with a learned gain `gamma` and shift `beta`, one per feature."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.d_model = d_model
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_model) -> (..., d_model), normalised over the last dimension."""
        return layer_norm(x, self.gamma, self.beta, self.eps)
