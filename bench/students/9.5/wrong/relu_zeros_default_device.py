"""Writes max(0, .) as torch.maximum(h, torch.zeros(h.shape)), a float32 CPU tensor: fails on GPU and upcasts half precision."""

import torch
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.linear_1(x)
        h = torch.maximum(h, torch.zeros(h.shape))  # max(0, x W_1 + b_1)
        return self.linear_2(self.dropout(h))
