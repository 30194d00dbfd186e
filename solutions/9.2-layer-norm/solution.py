"""Kata 9.2: layer normalisation.

Every sub-layer of the Transformer is wrapped as LayerNorm(x + Sublayer(x)) (Vaswani et al., 2017,
section 3.1, after Ba et al., 2016). Layer norm standardises each position's feature vector on its
own, with statistics over the last dimension (the d_model features) only, never across the batch
or the sequence:

    mu      = (1/d) * sum_i x_i                       the mean of the d features
    sigma^2 = (1/d) * sum_i (x_i - mu)^2               the biased variance: divide by d, not d - 1
    x_hat_i = (x_i - mu) / sqrt(sigma^2 + eps)         eps inside the square root
    y_i     = gamma_i * x_hat_i + beta_i               a learned gain and shift per feature

Why it helps: a residual stack keeps adding sub-layer outputs to the same stream, so without
normalisation the scale of the activations drifts from layer to layer, and with it the size of the
gradients. Normalising each position to mean 0 and variance 1 gives every sub-layer inputs of a
known scale, whatever the layers before it did; gamma and beta then let the model choose the scale
it actually wants (gamma = 1, beta = 0 at the start: the identity on the normalised vector).

eps keeps the division finite when a vector is (nearly) constant. Inside the root it means
"at least sqrt(eps)" for the denominator, and it is what torch's F.layer_norm and nn.LayerNorm do.

Public names (the kata's contract):
    layer_norm(x, gamma, beta, eps=1e-5) -> Tensor of x's shape, dtype and device; `x` is not modified.
    LayerNorm(d_model, eps=1e-5): nn.Module with parameters `gamma` (d_model,), initialised to ones,
        and `beta` (d_model,), initialised to zeros; forward(x) normalises over x's last dimension.
"""

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
        (..., d_model), with x's dtype and device. With gamma = 1 and beta = 0, each position's
        features have mean 0 and variance var / (var + eps), just under 1.
    """
    ### BEGIN SOLUTION
    # Statistics of each position's feature vector; keepdim=True keeps them broadcastable over x.
    mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
    centred = x - mean  # (..., d_model)
    var = (centred**2).mean(dim=-1, keepdim=True)  # (..., 1), biased: divides by d_model
    x_hat = centred / torch.sqrt(var + eps)  # (..., d_model), mean 0 and variance ~1 per position
    # gamma and beta, shape (d_model,), broadcast over the leading dimensions.
    return gamma * x_hat + beta  # (..., d_model)
    ### END SOLUTION


class LayerNorm(nn.Module):
    """Layer normalisation with a learned gain `gamma` and shift `beta`, one per feature.

    Args:
        d_model: the size of the last dimension, the one normalised over.
        eps:     added to the variance inside the square root.

    Parameters:
        gamma: (d_model,), initialised to ones.
        beta:  (d_model,), initialised to zeros.
    """

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        ### BEGIN SOLUTION
        self.eps = eps
        # At initialisation the layer only standardises: y = 1 * x_hat + 0.
        self.gamma = nn.Parameter(torch.ones(d_model))  # (d_model,)
        self.beta = nn.Parameter(torch.zeros(d_model))  # (d_model,)
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_model) -> (..., d_model), normalised over the last dimension."""
        ### BEGIN SOLUTION
        return layer_norm(x, self.gamma, self.beta, self.eps)
        ### END SOLUTION
