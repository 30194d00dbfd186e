"""Builds sines and cosines separately, interleaves them with torch.stack and flatten, in float64."""

import math

import torch
from torch import nn


def sinusoidal_positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    if d_model % 2 == 1:
        raise ValueError("need an even d_model")
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    freq = torch.pow(10000.0, -torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    angles = pos * freq  # (max_len, d_model/2)
    pe = torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1)  # sin, cos, sin, cos, ...
    return pe.float()


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1):
        super().__init__()
        self.max_len = max_len
        self.drop = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.size(1) > self.max_len:
            raise ValueError("too long")
        return self.drop(x + self.pe[: x.size(1)].unsqueeze(0))


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return math.sqrt(self.d_model) * self.embedding(tokens)
