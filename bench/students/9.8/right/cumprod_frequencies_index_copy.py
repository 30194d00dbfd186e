"""Gets the frequencies as a geometric sequence (cumprod of one ratio, float64); fills the columns with index_copy."""

import math

import torch
from torch import nn


def sinusoidal_positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even, got {d_model}")
    half = d_model // 2
    # w_i = 10000^(-2i/d) = r^i with r = 10000^(-2/d): a geometric sequence starting at 1
    ratio = torch.full((half,), 10000.0 ** (-2.0 / d_model), dtype=torch.float64)
    freqs = torch.cat([torch.ones(1, dtype=torch.float64), ratio[1:].cumprod(0)])
    angles = torch.arange(max_len, dtype=torch.float64)[:, None] * freqs[None, :]  # (max_len, half)
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table.index_copy_(1, torch.arange(0, d_model, 2), angles.sin())
    table.index_copy_(1, torch.arange(1, d_model, 2), angles.cos())
    return table.to(torch.get_default_dtype())


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1):
        super().__init__()
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq = x.shape[1]
        if seq > self.pe.shape[0]:
            raise ValueError(f"sequence of length {seq} is longer than max_len={self.pe.shape[0]}")
        return self.dropout(x + self.pe.narrow(0, 0, seq).to(dtype=x.dtype))


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.scale = math.sqrt(d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.embedding(tokens) * self.scale
