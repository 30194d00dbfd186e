"""Scales the queries in place (q /= sqrt(d_k)) before the product, which changes the caller's q tensor."""

import math  # noqa: I001

import torch
from torch import nn

from kata.earlier.softmax import softmax  # kata 9.1


def scaled_dot_product_attention(q, k, v, mask=None):
    q /= math.sqrt(q.shape[-1])  # scaling the smaller tensor is cheaper than scaling the scores
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    if mask is not None:
        weights = torch.where(mask.any(dim=-1, keepdim=True), weights, torch.zeros_like(weights))
    return weights @ v, weights


class AttentionHead(nn.Module):
    def __init__(self, d_model: int, d_head: int):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_head)
        self.w_k = nn.Linear(d_model, d_head)
        self.w_v = nn.Linear(d_model, d_head)
        self.attn_weights = None

    def forward(self, x, context=None, mask=None):
        kv = x if context is None else context
        out, self.attn_weights = scaled_dot_product_attention(self.w_q(x), self.w_k(kv), self.w_v(kv), mask)
        return out
