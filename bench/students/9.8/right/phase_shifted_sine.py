"""Writes every column as one sine, cos(a) = sin(a + pi/2), with a phase of pi/2 on the odd dimensions."""

import math

import torch
from torch import nn


def sinusoidal_positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    if d_model % 2:
        raise ValueError("the positional encoding needs an even d_model")
    dims = torch.arange(d_model, dtype=torch.float64)
    pair = torch.div(dims, 2, rounding_mode="floor")          # i for both 2i and 2i + 1
    freq = torch.pow(10000.0, -2.0 * pair / d_model)           # w_i
    phase = (dims % 2) * (math.pi / 2)                         # 0 for sin, pi/2 for cos
    pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(-1)
    table = torch.sin(pos * freq + phase)
    return table.to(dtype=torch.get_default_dtype())


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1):
        super().__init__()
        table = sinusoidal_positional_encoding(max_len, d_model)
        self.register_buffer("pe", table, persistent=True)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, seq, _ = x.size()
        if seq > self.pe.size(0):
            raise ValueError(f"max_len is {self.pe.size(0)} but the input has {seq} positions")
        positions = self.pe.narrow(0, 0, seq).to(x.dtype)
        return self.drop(x + positions.unsqueeze(0))


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        vectors = self.embedding(tokens)
        return vectors * math.sqrt(self.d_model)
