"""Hand-written dropout draws its mask as torch.rand(h.shape).float(): float32 on the CPU, whatever h's dtype/device."""

import torch
from torch import nn


class FeedForward(nn.Module):
    """Position-wise feed-forward network: linear_2(dropout(relu(linear_1(x)))).

    Submodules:
        linear_1: nn.Linear(d_model, d_ff), W_1 and b_1.
        linear_2: nn.Linear(d_ff, d_model), W_2 and b_2.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.p = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_model) -> (..., d_model); each position is transformed on its own."""
        h = torch.relu(self.linear_1(x))
        if self.training and self.p > 0:
            mask = (torch.rand(h.shape) > self.p).float()
            h = h * mask / (1 - self.p)
        return self.linear_2(h)
