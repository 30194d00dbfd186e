"""Flattens the positions, reshapes back to (x.shape[0], -1, d_model): right only for (batch, seq, d_model) input."""

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
        self.d_model = d_model
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, seq, d_model) -> (batch, seq, d_model), every position on its own."""
        batch = x.shape[0]
        positions = x.reshape(-1, self.d_model)  # (batch * seq, d_model): one row per position
        h = self.dropout(torch.relu(self.linear_1(positions)))
        y = self.linear_2(h)
        return y.reshape(batch, -1, self.d_model)
