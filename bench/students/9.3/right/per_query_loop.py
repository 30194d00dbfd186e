"""Loops over the queries: scores one query against all keys with a broadcast product and sum, then stacks the rows."""

import math  # noqa: I001

import torch
from torch import nn

from kata.earlier.softmax import softmax  # kata 9.1


def scaled_dot_product_attention(q, k, v, mask=None):
    scale = 1 / math.sqrt(q.shape[-1])
    outs, rows = [], []
    for i in range(q.shape[-2]):
        q_i = q[..., i : i + 1, :]  # (..., 1, d_k)
        s_i = (q_i * k).sum(dim=-1) * scale  # (..., k_len)
        if mask is not None:
            m_i = torch.broadcast_to(mask, (*s_i.shape[:-1], q.shape[-2], s_i.shape[-1]))[..., i, :]
            s_i = s_i.masked_fill(~m_i, float("-inf"))
            w_i = softmax(s_i, dim=-1)
            w_i = torch.where(m_i, w_i, torch.zeros((), dtype=w_i.dtype, device=w_i.device))
        else:
            w_i = softmax(s_i, dim=-1)
        rows.append(w_i)
        outs.append((w_i.unsqueeze(-1) * v).sum(dim=-2))  # (..., d_v)
    return torch.stack(outs, dim=-2), torch.stack(rows, dim=-2)


class AttentionHead(nn.Module):
    def __init__(self, d_model: int, d_head: int):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_head)
        self.w_k = nn.Linear(d_model, d_head)
        self.w_v = nn.Linear(d_model, d_head)
        self.attn_weights = None

    def extra_repr(self) -> str:
        return f"d_head={self.w_q.out_features}"

    def forward(self, x, context=None, mask=None):
        c = x if context is None else context
        out, weights = scaled_dot_product_attention(self.w_q(x), self.w_k(c), self.w_v(c), mask=mask)
        self.attn_weights = weights
        return out
