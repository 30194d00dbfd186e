"""Gives every dimension its own exponent k / d_model, so the cosine of pair i uses (2i + 1) / d_model instead of 2i / d_model."""

import math

import torch
from torch import nn


def sinusoidal_positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    if d_model % 2 != 0:
        raise ValueError("d_model must be even")
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    k = torch.arange(d_model, dtype=torch.float64)[None, :]
    angles = pos / torch.pow(10000.0, k / d_model)   # one angle per (position, dimension)
    pe = torch.empty(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles[:, 0::2])
    pe[:, 1::2] = torch.cos(angles[:, 1::2])
    return pe.float()


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1):
        super().__init__()
        self.max_len = max_len
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq = x.size(1)
        if seq > self.max_len:
            raise ValueError(f"sequence length {seq} is too long for max_len {self.max_len}")
        return self.dropout(x + self.pe[:seq])


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.d_model = d_model

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.embedding(tokens) * math.sqrt(self.d_model)
