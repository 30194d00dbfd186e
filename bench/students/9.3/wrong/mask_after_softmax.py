"""Takes the softmax over all keys and then multiplies the weights by the mask, without renormalising the rows."""

import math  # noqa: I001

import torch
from torch import nn

from kata.earlier.softmax import softmax  # kata 9.1


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    weights = softmax(scores, dim=-1)
    if mask is not None:
        weights = weights * mask  # blocked keys get exactly 0, and no -inf means no NaN
    return torch.matmul(weights, v), weights


class AttentionHead(nn.Module):
    def __init__(self, d_model: int, d_head: int):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_head)
        self.w_k = nn.Linear(d_model, d_head)
        self.w_v = nn.Linear(d_model, d_head)
        self.attn_weights = None

    def forward(self, x, context=None, mask=None):
        ctx = x if context is None else context
        out, w = scaled_dot_product_attention(self.w_q(x), self.w_k(ctx), self.w_v(ctx), mask)
        self.attn_weights = w
        return out
