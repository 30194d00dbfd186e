"""Gets the exponents 2i / d_model from torch.linspace, fills even and odd columns by slice assignment in float64, and uses F.dropout."""

import math

import torch
from torch import nn
import torch.nn.functional as F


def sinusoidal_positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even, got {d_model}")
    half = d_model // 2
    # 2i / d_model for i = 0 .. half - 1, i.e. 0, 2/d, 4/d, ..., (d - 2)/d
    exponents = torch.linspace(0.0, (d_model - 2) / d_model, steps=half, dtype=torch.float64)
    inv_freq = 10000.0 ** (-exponents)
    positions = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    angles = positions * inv_freq.unsqueeze(0)  # (max_len, half)
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = angles.sin()
    table[:, 1::2] = angles.cos()
    return table.to(torch.get_default_dtype())


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1):
        super().__init__()
        self.max_len = max_len
        self.p = dropout
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq_len = x.shape[1]
        if seq_len > self.max_len:
            raise ValueError(f"sequence of length {seq_len} is longer than max_len={self.max_len}")
        out = x + self.pe[:seq_len]
        return F.dropout(out, p=self.p, training=self.training)


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.scale = math.sqrt(d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.embedding(tokens) * self.scale
