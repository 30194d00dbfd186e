"""Folds the heads into the batch head-major (h, b) like torch does, but flattens the mask batch-major (b, h), so per-sequence masks land on the wrong sequences."""

import torch  # noqa: I001
from torch import nn

from kata.earlier.attention import scaled_dot_product_attention  # kata 9.3


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError("d_model must be divisible by n_heads")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        self.attn_weights = None

    def _fold(self, t):
        b, n, _ = t.shape  # -> (n_heads * b, n, d_k), head-major
        return t.view(b, n, self.n_heads, self.d_k).permute(2, 0, 1, 3).reshape(self.n_heads * b, n, self.d_k)

    def forward(self, query, key, value, mask=None):
        b, q_len, k_len = query.size(0), query.size(1), key.size(1)
        q, k, v = self._fold(self.w_q(query)), self._fold(self.w_k(key)), self._fold(self.w_v(value))
        if mask is not None:
            mask = mask.expand(b, self.n_heads, q_len, k_len).reshape(-1, q_len, k_len)
        out, w = scaled_dot_product_attention(q, k, v, mask)
        self.attn_weights = w.view(self.n_heads, b, q_len, k_len).transpose(0, 1)
        if self.training:
            out = self.dropout(w) @ v
        out = out.view(self.n_heads, b, q_len, self.d_k).permute(1, 2, 0, 3).reshape(b, q_len, self.d_model)
        return self.w_o(out)
