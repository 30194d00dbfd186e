"""Builds both layers with bias=False."""

import torch
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.linear_1 = nn.Linear(d_model, d_ff, bias=False)
        self.linear_2 = nn.Linear(d_ff, d_model, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.linear_1(x))
        h = self.dropout(h)
        return self.linear_2(h)
