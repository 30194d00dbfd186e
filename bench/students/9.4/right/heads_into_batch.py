"""Folds the heads into the batch dimension (batch * n_heads, len, d_k), expanding the mask the same way, and unfolds after."""

import torch  # noqa: I001
from torch import nn

from kata.earlier.attention import scaled_dot_product_attention  # kata 9.3


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads:
            raise ValueError("n_heads must divide d_model")
        self.d_model = d_model
        self.h = n_heads
        self.d_k = d_model // n_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))
        self.dropout = nn.Dropout(dropout)
        self.attn_weights = None

    def _fold(self, t: torch.Tensor) -> torch.Tensor:
        b, n, _ = t.shape
        return t.view(b, n, self.h, self.d_k).transpose(1, 2).reshape(b * self.h, n, self.d_k)

    def forward(self, query, key, value, mask=None):
        b, q_len, k_len = query.size(0), query.size(1), key.size(1)
        q, k, v = self._fold(self.w_q(query)), self._fold(self.w_k(key)), self._fold(self.w_v(value))
        if mask is not None:
            mask = mask.expand(b, self.h, q_len, k_len).reshape(b * self.h, q_len, k_len)
        out, w = scaled_dot_product_attention(q, k, v, mask)  # (b*h, q_len, d_k), (b*h, q_len, k_len)
        self.attn_weights = w.reshape(b, self.h, q_len, k_len)
        if self.training:
            out = self.dropout(w) @ v
        out = out.reshape(b, self.h, q_len, self.d_k).transpose(1, 2).reshape(b, q_len, self.d_model)
        return self.w_o(out)
