"""Keeps linear_1 and linear_2 as attributes but runs them through an nn.Sequential with nn.ReLU."""

import torch
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.net = nn.Sequential(self.linear_1, nn.ReLU(), nn.Dropout(dropout), self.linear_2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)
