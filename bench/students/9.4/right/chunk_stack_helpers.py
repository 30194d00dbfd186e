"""Module-level helpers split the heads with chunk + stack and merge them with unbind + cat."""

import torch  # noqa: I001
from torch import nn

from kata.earlier.attention import scaled_dot_product_attention  # kata 9.3


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(batch, len, d_model) -> (batch, n_heads, len, d_k): head i is the i-th chunk of the features."""
    return torch.stack(x.chunk(n_heads, dim=-1), dim=1)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(batch, n_heads, len, d_k) -> (batch, len, n_heads * d_k), head 1 first."""
    return torch.cat(x.unbind(dim=1), dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if n_heads <= 0 or d_model % n_heads != 0:
            raise ValueError(f"cannot split d_model={d_model} into {n_heads} heads")
        self.n_heads = n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.p = dropout
        self.drop = nn.Dropout(p=dropout)
        self.attn_weights = None

    def forward(self, query, key, value, mask=None):
        q = split_heads(self.w_q(query), self.n_heads)
        k = split_heads(self.w_k(key), self.n_heads)
        v = split_heads(self.w_v(value), self.n_heads)
        heads, attn = scaled_dot_product_attention(q, k, v, mask=mask)
        self.attn_weights = attn
        if self.training and self.p > 0.0:
            heads = torch.matmul(self.drop(attn), v)
        return self.w_o(merge_heads(heads))
