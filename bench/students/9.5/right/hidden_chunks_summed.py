"""Splits d_ff into chunks and sums each chunk's contribution to the output (the hidden units are independent)."""

import torch
import torch.nn.functional as F
from torch import nn


class FeedForward(nn.Module):
    """Position-wise feed-forward network: linear_2(dropout(relu(linear_1(x)))).

    The hidden layer is processed chunk_size units at a time: linear_2 of the full hidden vector is
    W_2[:, chunk_1] h_1 + W_2[:, chunk_2] h_2 + ... + b_2, so the (..., d_ff) activation never exists
    all at once (handy when d_ff is large).
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, chunk_size: int = 256):
        super().__init__()
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.chunk_size = chunk_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_model) -> (..., d_model); each position is transformed on its own."""
        w1, b1 = self.linear_1.weight, self.linear_1.bias
        w2 = self.linear_2.weight
        out = None
        for start in range(0, w1.shape[0], self.chunk_size):
            rows = slice(start, start + self.chunk_size)
            h = F.relu(F.linear(x, w1[rows], b1[rows]))
            h = self.dropout(h)
            part = F.linear(h, w2[:, rows])
            out = part if out is None else out + part
        return out + self.linear_2.bias
