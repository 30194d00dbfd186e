"""Applies the ReLU to the input before linear_1 instead of to the hidden layer (linear_2(linear_1(relu(x))))."""

import torch
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.linear_1(torch.relu(x))
        h = self.dropout(h)
        return self.linear_2(h)
