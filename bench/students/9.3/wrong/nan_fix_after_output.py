"""Zeroes the NaN weights of fully blocked rows only after computing the output, so those rows' output stays NaN."""

import math  # noqa: I001

import torch
from torch import nn

from kata.earlier.softmax import softmax  # kata 9.1


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    output = weights @ v
    weights = torch.nan_to_num(weights, nan=0.0)  # rows with every key blocked
    return output, weights


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
        out, self.attn_weights = scaled_dot_product_attention(self.w_q(x), self.w_k(context), self.w_v(context), mask)
        return out
