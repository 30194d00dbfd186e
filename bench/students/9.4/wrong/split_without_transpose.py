"""Splits the heads with view(b, n_heads, -1, d_k) directly, with no transpose, so heads cut the sequence."""

import math  # noqa: I001

import torch
from torch import nn

from kata.earlier.attention import scaled_dot_product_attention  # kata 9.3


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError("d_model must be divisible by n_heads")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        self.attn_weights = None

    def forward(self, query, key, value, mask=None):
        b = query.size(0)
        q = self.w_q(query).view(b, self.n_heads, -1, self.d_k)
        k = self.w_k(key).view(b, self.n_heads, -1, self.d_k)
        v = self.w_v(value).view(b, self.n_heads, -1, self.d_k)
        out, attn = scaled_dot_product_attention(q, k, v, mask)
        self.attn_weights = attn
        if self.training:
            out = self.dropout(attn) @ v
        out = out.transpose(1, 2).contiguous().view(b, -1, self.d_model)
        return self.w_o(out)
