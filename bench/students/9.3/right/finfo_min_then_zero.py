"""Fills blocked scores with the dtype's most negative finite number, then zeroes them after the softmax; attn_weights is a buffer."""

import math  # noqa: I001

import torch
from torch import nn

from kata.earlier.softmax import softmax  # kata 9.1


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = k.size(-1)
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d_k)
    if mask is None:
        weights = softmax(scores)
    else:
        # a finite fill: a fully blocked row becomes uniform instead of NaN, and is zeroed just below
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = softmax(scores).masked_fill(~mask, 0.0)
    return torch.matmul(weights, v), weights


class AttentionHead(nn.Module):
    def __init__(self, d_model: int, d_head: int):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_head)
        self.w_k = nn.Linear(d_model, d_head)
        self.w_v = nn.Linear(d_model, d_head)
        self.register_buffer("attn_weights", None, persistent=False)

    def forward(self, x, context=None, mask=None):
        kv = context if context is not None else x
        out, self.attn_weights = scaled_dot_product_attention(self.w_q(x), self.w_k(kv), self.w_v(kv), mask)
        return out
