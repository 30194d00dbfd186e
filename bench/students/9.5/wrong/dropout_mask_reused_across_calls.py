"""Draws the dropout mask once per input shape and reuses it on later calls: the same units are dropped every step."""

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
        self._mask = None  # drawing random numbers is slow: draw once, reuse while the shape is the same

    def _dropout(self, h: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return h
        if self._mask is None or self._mask.shape != h.shape:
            keep = torch.bernoulli(torch.full_like(h, 1 - self.p))
            self._mask = keep / (1 - self.p)
        return h * self._mask

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_model) -> (..., d_model); each position is transformed on its own."""
        return self.linear_2(self._dropout(torch.relu(self.linear_1(x))))
