"""A correct reshape/transpose version with shape asserts and a verbose flag that prints."""

import torch  # noqa: I001
from torch import nn

from kata.earlier.attention import scaled_dot_product_attention  # kata 9.3


class MultiHeadAttention(nn.Module):
    verbose = False

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError("bad head count")
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
        batch, q_len, _ = query.shape
        k_len = key.shape[1]
        q = self.w_q(query).reshape(batch, q_len, self.n_heads, self.d_k).transpose(1, 2)
        k = self.w_k(key).reshape(batch, k_len, self.n_heads, self.d_k).transpose(1, 2)
        v = self.w_v(value).reshape(batch, k_len, self.n_heads, self.d_k).transpose(1, 2)
        assert q.shape == (batch, self.n_heads, q_len, self.d_k)
        out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
        self.attn_weights = weights
        if self.verbose:
            print("weights", weights.shape)
        out = torch.matmul(self.dropout(weights), v)
        out = out.transpose(1, 2).reshape(batch, q_len, self.d_model)
        return self.w_o(out)
