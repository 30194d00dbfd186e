"""Builds the table row by row: each position is the previous one with every (sin, cos) pair rotated by w_i, in float64."""

import math

import torch
from torch import nn


def sinusoidal_positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    if d_model % 2 == 1:
        raise ValueError(f"d_model must be even, got {d_model}")
    half = d_model // 2
    w = torch.tensor([10000.0 ** (-2 * i / d_model) for i in range(half)], dtype=torch.float64)
    cos_w, sin_w = torch.cos(w), torch.sin(w)
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    s = torch.zeros(half, dtype=torch.float64)  # sin(0 * w)
    c = torch.ones(half, dtype=torch.float64)   # cos(0 * w)
    for pos in range(max_len):
        pe[pos, 0::2] = s
        pe[pos, 1::2] = c
        # angle addition: one step further along the circle
        s, c = s * cos_w + c * sin_w, c * cos_w - s * sin_w
    return pe.to(torch.get_default_dtype())


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1):
        super().__init__()
        self.max_len = max_len
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq_len = x.shape[-2]
        if seq_len > self.max_len:
            raise ValueError(f"sequence of length {seq_len} is longer than max_len={self.max_len}")
        return self.dropout(x + self.pe[:seq_len])


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.scale = math.sqrt(d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.embedding(tokens).mul(self.scale)
