"""For self-attention (query is key is value) projects q, k, v in one F.linear with the three weights concatenated, then chunks."""

import torch  # noqa: I001
from torch import nn
import torch.nn.functional as F

from kata.earlier.attention import scaled_dot_product_attention  # kata 9.3


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError(f"d_model={d_model} must be a multiple of n_heads={n_heads}")
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)
        self.attn_weights = None

    def _project(self, query, key, value):
        if query is key and key is value:  # self-attention: one matmul instead of three
            weight = torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight], dim=0)
            bias = torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias], dim=0)
            return F.linear(query, weight, bias).chunk(3, dim=-1)
        return self.w_q(query), self.w_k(key), self.w_v(value)

    def forward(self, query, key, value, mask=None):
        b = query.shape[0]
        q, k, v = self._project(query, key, value)
        q, k, v = (t.reshape(b, -1, self.n_heads, self.d_k).transpose(1, 2) for t in (q, k, v))
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        self.attn_weights = weights
        if self.training and self.attn_dropout.p > 0:
            out = self.attn_dropout(weights) @ v
        out = out.transpose(1, 2).reshape(b, -1, self.n_heads * self.d_k)
        return self.w_o(out)
