"""Projects with einsum against each weight viewed as (n_heads, d_k, d_model), and merges with flatten."""

import torch  # noqa: I001
from torch import nn
import torch.nn.functional as F

from kata.earlier.attention import scaled_dot_product_attention  # kata 9.3


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError("n_heads must divide d_model")
        self.h = n_heads
        self.d_k = d_model // n_heads
        self.p = dropout
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.attn_weights = None

    def _project(self, layer: nn.Linear, x):
        w = layer.weight.view(self.h, self.d_k, -1)  # (h, d_k, d_model)
        bias = layer.bias.view(self.h, 1, self.d_k)
        return torch.einsum("bld,hkd->bhlk", x, w) + bias  # (b, h, len, d_k)

    def forward(self, query, key, value, mask=None):
        q = self._project(self.w_q, query)
        k = self._project(self.w_k, key)
        v = self._project(self.w_v, value)
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        self.attn_weights = weights
        if self.training and self.p > 0:
            out = F.dropout(weights, self.p, training=True) @ v
        out = out.transpose(1, 2).flatten(2)  # (b, q_len, d_model)
        return self.w_o(out)
