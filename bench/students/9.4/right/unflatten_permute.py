"""Splits with unflatten and permute, merges with permute and reshape, through helper methods."""

import torch  # noqa: I001
from torch import nn

from kata.earlier.attention import scaled_dot_product_attention  # kata 9.3


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError("d_model % n_heads != 0")
        self.d_model = d_model
        self.n_heads = n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(p=dropout)
        self.attn_weights = None

    def split(self, t: torch.Tensor) -> torch.Tensor:
        return t.unflatten(-1, (self.n_heads, -1)).permute(0, 2, 1, 3)

    def merge(self, t: torch.Tensor) -> torch.Tensor:
        b, h, n, dk = t.shape
        return t.permute(0, 2, 1, 3).reshape(b, n, h * dk)

    def forward(self, query, key, value, mask=None):
        q, k, v = self.split(self.w_q(query)), self.split(self.w_k(key)), self.split(self.w_v(value))
        out, self.attn_weights = scaled_dot_product_attention(q, k, v, mask)
        if self.training and self.dropout.p > 0.0:
            out = torch.matmul(self.dropout(self.attn_weights), v)
        return self.w_o(self.merge(out))
