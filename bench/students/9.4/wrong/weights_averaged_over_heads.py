"""Keeps attn_weights averaged over the heads (like nn.MultiheadAttention's default), shape (batch, q_len, k_len)."""

import torch  # noqa: I001
from torch import nn

from kata.earlier.attention import scaled_dot_product_attention  # kata 9.3


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError("d_model must be divisible by n_heads")
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
        q = self.w_q(query).view(b, -1, self.n_heads, self.d_k).transpose(1, 2)
        k = self.w_k(key).view(b, -1, self.n_heads, self.d_k).transpose(1, 2)
        v = self.w_v(value).view(b, -1, self.n_heads, self.d_k).transpose(1, 2)
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        if self.training:
            out = self.dropout(weights) @ v
        self.attn_weights = weights.mean(dim=1)  # one map per query, easier to plot
        out = out.transpose(1, 2).reshape(b, -1, self.n_heads * self.d_k)
        return self.w_o(out)
