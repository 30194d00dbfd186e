"""Copy-paste slip: the values are projected with self.w_k instead of self.w_v (w_v is never used)."""

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

    def split(self, t: torch.Tensor) -> torch.Tensor:
        return t.view(t.size(0), -1, self.n_heads, self.d_k).transpose(1, 2)

    def forward(self, query, key, value, mask=None):
        q = self.split(self.w_q(query))
        k = self.split(self.w_k(key))
        v = self.split(self.w_k(value))
        out, self.attn_weights = scaled_dot_product_attention(q, k, v, mask)
        if self.training:
            out = self.dropout(self.attn_weights) @ v
        out = out.transpose(1, 2).reshape(query.size(0), -1, self.n_heads * self.d_k)
        return self.w_o(out)
