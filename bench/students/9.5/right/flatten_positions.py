"""Flattens all positions into one batch of vectors, runs the layers, and reshapes back; prints shapes."""

import torch
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.d_model = d_model
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.relu = nn.ReLU()
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        flat = x.reshape(-1, self.d_model)  # (positions, d_model)
        print("ffn on", flat.shape[0], "positions")
        out = self.linear_2(self.dropout(self.relu(self.linear_1(flat))))
        return out.reshape(*lead, self.d_model)
