"""Writes the first layer by hand as x @ W_1^T and forgets to add its bias b_1."""

import torch
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, written out as in the paper
        h = torch.clamp(x @ self.linear_1.weight.T, min=0)
        return self.linear_2(self.dropout(h))
