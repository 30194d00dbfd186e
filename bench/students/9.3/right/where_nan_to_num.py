"""Masks with torch.where and -inf, then turns the NaN of fully blocked rows into 0 with nan_to_num."""

import math  # noqa: I001

import torch
from torch import nn

from kata.earlier.softmax import softmax  # kata 9.1


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.mT) / math.sqrt(k.size(-1))
    if mask is not None:
        scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=scores.dtype, device=scores.device))
    weights = softmax(scores, dim=-1)
    weights = torch.nan_to_num(weights, nan=0.0)
    return torch.matmul(weights, v), weights


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
        q = self.w_q(x)
        k = self.w_k(context)
        v = self.w_v(context)
        output, self.attn_weights = scaled_dot_product_attention(q, k, v, mask=mask)
        return output
