"""Scales the queries by 1/sqrt(d_k) before the product, and uses torch.softmax (allowed in this kata)."""

import math  # noqa: I001

import torch
from torch import nn


def scaled_dot_product_attention(q, k, v, mask=None):
    q = q * (1.0 / math.sqrt(q.size(-1)))
    scores = q @ k.transpose(-1, -2)
    if mask is not None:
        scores = scores.masked_fill(mask == False, float("-inf"))  # noqa: E712
    attn = torch.softmax(scores, dim=-1)
    if mask is not None:
        attn = attn.masked_fill(mask == False, 0)  # noqa: E712
    return attn @ v, attn


class AttentionHead(nn.Module):
    def __init__(self, d_model: int, d_head: int):
        super().__init__()
        self.d_head = d_head
        self.w_q = nn.Linear(d_model, d_head)
        self.w_k = nn.Linear(d_model, d_head)
        self.w_v = nn.Linear(d_model, d_head)
        self.attn_weights = None

    def forward(self, x, context=None, mask=None):
        kv = context if context is not None else x
        out, self.attn_weights = scaled_dot_product_attention(self.w_q(x), self.w_k(kv), self.w_v(kv), mask)
        return out
