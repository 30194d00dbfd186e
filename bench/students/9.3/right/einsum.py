"""Computes scores and output with torch.einsum over '...qd,...kd->...qk'."""

import math  # noqa: I001

import torch
from torch import nn

from kata.earlier.softmax import softmax  # kata 9.1


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), -math.inf)
    weights = softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask.logical_not(), 0.0)
    out = torch.einsum("...qk,...kd->...qd", weights, v)
    return out, weights


class AttentionHead(nn.Module):
    def __init__(self, d_model: int, d_head: int):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_head)
        self.w_k = nn.Linear(d_model, d_head)
        self.w_v = nn.Linear(d_model, d_head)
        self.attn_weights = None

    def forward(self, x, context=None, mask=None):
        src = x if context is None else context
        out, weights = scaled_dot_product_attention(self.w_q(x), self.w_k(src), self.w_v(src), mask)
        self.attn_weights = weights
        return out
