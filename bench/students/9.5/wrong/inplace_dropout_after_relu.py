"""Hand-written dropout multiplies the ReLU output in place (h *= mask), which ReLU's backward needs: backward fails."""

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
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_model) -> (..., d_model); each position is transformed on its own."""
        h = torch.relu(self.linear_1(x))
        if self.training and self.dropout > 0:
            keep = torch.rand_like(h) >= self.dropout
            h *= keep.to(h.dtype) / (1.0 - self.dropout)  # in place: saves allocating another d_ff-wide tensor
        return self.linear_2(h)
