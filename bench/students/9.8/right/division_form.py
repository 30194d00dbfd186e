"""Divides positions by 10000 ** (2i / d_model) directly and prints the table's shape when built."""

import math

import torch
from torch import nn


def sinusoidal_positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    if d_model % 2 != 0:
        raise ValueError("d_model must be even")
    position = torch.arange(0, max_len).unsqueeze(1).double()
    i = torch.arange(0, d_model // 2).double()
    denominator = 10000 ** (2 * i / d_model)
    pe = torch.empty(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position / denominator)
    pe[:, 1::2] = torch.cos(position / denominator)
    print("positional encoding table", tuple(pe.shape))
    return pe.to(torch.float32)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1):
        super().__init__()
        pe = sinusoidal_positional_encoding(max_len, d_model)
        self.register_buffer("pe", pe)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, seq, _ = x.shape
        if seq > len(self.pe):
            raise ValueError(f"sequence length {seq} exceeds max_len {len(self.pe)}")
        out = x + self.pe[:seq]
        return self.dropout(out)


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(num_embeddings=vocab_size, embedding_dim=d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.embedding(tokens) * self.d_model ** 0.5
