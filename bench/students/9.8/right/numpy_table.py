"""Builds the table with numpy (np.outer of positions and frequencies) and converts it to torch's default dtype."""

import numpy as np
import torch
from torch import nn


def sinusoidal_positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    if d_model % 2 == 1:
        raise ValueError(f"odd d_model={d_model}: the encoding needs (sin, cos) pairs")
    freqs = np.power(10000.0, -np.arange(0, d_model, 2) / d_model)  # (d_model / 2,)
    angles = np.outer(np.arange(max_len), freqs)  # (max_len, d_model / 2)
    table = np.empty((max_len, d_model))
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return torch.from_numpy(table).to(torch.get_default_dtype())


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1):
        super().__init__()
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model), persistent=True)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, seq, _ = x.shape
        max_len = len(self.pe)
        if seq > max_len:
            raise ValueError(f"sequence length {seq} > max_len {max_len}")
        positions = self.pe[:seq]  # (seq, d_model), broadcast over the batch
        return self.dropout(x + positions.to(x.dtype))


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.d_model = d_model

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        vectors = self.embedding(tokens)  # (batch, seq, d_model)
        return vectors * self.d_model ** 0.5
