"""Takes the outer product of positions and frequencies with torch.einsum, frequencies in log space, and checks lengths against the buffer's own size."""

import math

import torch
from torch import nn


def sinusoidal_positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    if d_model % 2 == 1:
        raise ValueError("d_model has to be even for sin/cos pairs")
    pair_index = torch.arange(d_model // 2, dtype=torch.float64)
    freqs = torch.exp(-math.log(10000.0) * (2.0 * pair_index) / d_model)
    pos = torch.arange(max_len, dtype=torch.float64)
    angle = torch.einsum("p,f->pf", pos, freqs)
    pe = torch.empty(max_len, d_model, dtype=torch.get_default_dtype())
    pe[:, ::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1):
        super().__init__()
        pe = sinusoidal_positional_encoding(max_len, d_model)
        self.register_buffer("pe", pe)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, seq, _ = x.shape
        if seq > self.pe.size(0):
            raise ValueError(f"got {seq} positions but the table only has {self.pe.size(0)}")
        summed = torch.add(x, self.pe[:seq].unsqueeze(0))
        return self.dropout(summed)


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        vectors = self.embedding(tokens)
        return torch.mul(vectors, math.sqrt(self.d_model))
