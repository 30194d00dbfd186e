"""A correct attention with shape prints and an explicit fully-blocked-row fix via any()."""

import math  # noqa: I001

import torch
from torch import nn

from kata.earlier.softmax import softmax  # kata 9.1


def scaled_dot_product_attention(q, k, v, mask=None):
    print("q", tuple(q.shape), "k", tuple(k.shape), "v", tuple(v.shape))
    d_k = k.shape[-1]
    scores = q.matmul(k.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is None:
        weights = softmax(scores, dim=-1)
    else:
        mask = mask.expand(scores.shape)
        scores = scores.masked_fill(~mask, float("-inf"))
        weights = softmax(scores, dim=-1)
        has_any = mask.any(dim=-1, keepdim=True)
        weights = torch.where(has_any & mask, weights, torch.zeros_like(weights))
    print("weights", tuple(weights.shape))
    return weights.matmul(v), weights


class AttentionHead(nn.Module):
    def __init__(self, d_model: int, d_head: int):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_head)
        self.w_k = nn.Linear(d_model, d_head)
        self.w_v = nn.Linear(d_model, d_head)
        self.attn_weights = None

    def forward(self, x, context=None, mask=None):
        if context is None:
            context = x
        out, attn = scaled_dot_product_attention(self.w_q(x), self.w_k(context), self.w_v(context), mask)
        self.attn_weights = attn
        return out
