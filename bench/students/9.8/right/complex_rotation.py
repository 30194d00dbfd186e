"""Builds each sin/cos pair as a unit complex number exp(i * pos * w) with torch.polar, then views it as real."""

import math

import torch
from torch import nn


def sinusoidal_positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    if d_model % 2 != 0:
        raise ValueError("d_model must be even")
    w = 1.0 / 10000.0 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    angle = torch.outer(torch.arange(max_len, dtype=torch.float64), w)
    z = torch.polar(torch.ones_like(angle), angle)  # cos + i sin
    pe = torch.view_as_real(z).flip(-1).reshape(max_len, d_model)  # (sin, cos) pairs
    return pe.to(torch.get_default_dtype())


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model), persistent=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        length = x.size(-2)
        if length > self.pe.size(0):
            raise ValueError("sequence longer than max_len")
        return self.dropout(x + self.pe.narrow(0, 0, length))


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.embedding(tokens).mul(math.sqrt(self.d_model))
