"""Writes the ReLU as clamp(min=0) and keeps the dropout module as self.dropout, with type hints and d_ff stored."""

import torch
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.d_model: int = d_model
        self.d_ff: int = d_ff
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.dropout = nn.Dropout(dropout)
        self.linear_2 = nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden: torch.Tensor = self.linear_1(x).clamp(min=0.0)
        hidden = self.dropout(hidden)
        return self.linear_2(hidden)
