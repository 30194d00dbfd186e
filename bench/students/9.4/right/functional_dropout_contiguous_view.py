"""Uses F.dropout with training=self.training on the weights and merges with transpose(1, 2).contiguous().view."""

import torch  # noqa: I001
from torch import nn
import torch.nn.functional as F

from kata.earlier.attention import scaled_dot_product_attention  # kata 9.3


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError("d_model must be divisible by n_heads")
        self.d_model: int = d_model
        self.n_heads: int = n_heads
        self.d_k: int = d_model // n_heads
        self.dropout_p: float = dropout
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.attn_weights: torch.Tensor | None = None

    def forward(self, query, key, value, mask=None):
        batch = query.size(0)
        q = self.w_q(query).view(batch, -1, self.n_heads, self.d_k).transpose(1, 2)
        k = self.w_k(key).view(batch, -1, self.n_heads, self.d_k).transpose(1, 2)
        v = self.w_v(value).view(batch, -1, self.n_heads, self.d_k).transpose(1, 2)
        _, weights = scaled_dot_product_attention(q, k, v, mask)
        self.attn_weights = weights
        weights = F.dropout(weights, p=self.dropout_p, training=self.training)
        context = torch.matmul(weights, v)  # same as the attention's output when dropout is off
        context = context.transpose(1, 2).contiguous().view(batch, -1, self.d_model)
        return self.w_o(context)
