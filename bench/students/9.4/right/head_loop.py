"""Loops over the heads, slicing each head's d_k features from the projections, then concatenates."""

import torch  # noqa: I001
from torch import nn

from kata.earlier.attention import scaled_dot_product_attention  # kata 9.3


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"{d_model} is not divisible by {n_heads}")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)
        self.attn_weights = None

    def forward(self, query, key, value, mask=None):
        q_all, k_all, v_all = self.w_q(query), self.w_k(key), self.w_v(value)
        outs, weights = [], []
        for h in range(self.n_heads):
            cols = slice(h * self.d_k, (h + 1) * self.d_k)
            v_h = v_all[..., cols]
            mask_h = mask
            if mask is not None and mask.dim() == 4:
                mask_h = mask[:, h if mask.size(1) > 1 else 0]  # this head's (batch, q_len or 1, k_len)
            o, w = scaled_dot_product_attention(q_all[..., cols], k_all[..., cols], v_h, mask_h)
            if self.training:
                o = self.drop(w) @ v_h
            outs.append(o)
            weights.append(w)
        self.attn_weights = torch.stack(weights, dim=1)  # (batch, n_heads, q_len, k_len)
        return self.w_o(torch.cat(outs, dim=-1))
