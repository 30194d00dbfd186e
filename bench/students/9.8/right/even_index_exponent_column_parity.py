"""One angle per column, exponent k - k % 2 (the even index of its pair), then sin or cos by the column's parity."""

import math

import torch
from torch import nn


def sinusoidal_positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    if d_model % 2:
        raise ValueError("d_model must be even for sin/cos pairs")
    k = torch.arange(d_model)
    two_i = (k - k % 2).double()  # 0, 0, 2, 2, 4, 4, ...
    pos = torch.arange(max_len).double().unsqueeze(1)
    angle = pos / torch.pow(10000.0, two_i / d_model)  # (max_len, d_model)
    pe = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, 1::2])
    return pe.float() if torch.get_default_dtype() == torch.float32 else pe.to(torch.get_default_dtype())


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.1):
        super().__init__()
        self.max_len = max_len
        pe = sinusoidal_positional_encoding(max_len, d_model)
        self.register_buffer("pe", pe)
        self.drop = nn.Dropout(p=dropout)

    def forward(self, x):
        n = x.size(1)
        if n > self.max_len:
            raise ValueError(f"got {n} positions, PositionalEncoding was built for at most {self.max_len}")
        out = x + self.pe[:n].unsqueeze(0).type_as(x)
        return self.drop(out)


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model)

    def forward(self, tokens):
        return torch.mul(self.embedding(tokens), math.sqrt(self.d_model))
