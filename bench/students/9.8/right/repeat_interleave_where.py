"""Repeats each frequency twice with repeat_interleave and picks sin or cos per column with torch.where."""

import math

import torch
from torch import nn


def sinusoidal_positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    if d_model % 2 != 0:
        raise ValueError(f"odd d_model ({d_model}): sin/cos need pairs of dimensions")
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    inv_freq = 1.0 / (10000 ** (two_i / d_model))
    inv_freq = inv_freq.repeat_interleave(2)                    # (d_model,): w_0, w_0, w_1, w_1, ...
    angles = torch.outer(torch.arange(max_len, dtype=torch.float64), inv_freq)
    is_even = torch.arange(d_model) % 2 == 0
    pe = torch.where(is_even, torch.sin(angles), torch.cos(angles))
    return pe.float()


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1):
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.size(1)
        if n > self.max_len:
            raise ValueError("input sequence longer than max_len")
        y = torch.add(x, self.pe[:n, :])
        return self.dropout(y)


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.d_model = d_model

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        factor = math.sqrt(self.d_model)
        return factor * self.embedding(tokens)
