"""Fills the table with two Python loops over positions and pairs, exactly as the formula reads."""

import math

import torch
from torch import nn


def sinusoidal_positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    if d_model % 2:
        raise ValueError(f"odd d_model {d_model}")
    table = [[0.0] * d_model for _ in range(max_len)]
    for pos in range(max_len):
        for i in range(d_model // 2):
            angle = pos / (10000 ** (2 * i / d_model))
            table[pos][2 * i] = math.sin(angle)
            table[pos][2 * i + 1] = math.cos(angle)
    return torch.tensor(table, dtype=torch.get_default_dtype())


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[1]
        if n > self.pe.shape[0]:
            raise ValueError(f"{n} > max_len")
        return self.dropout(x + self.pe[:n, :])


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.scale = math.sqrt(d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.embedding(tokens) * self.scale
