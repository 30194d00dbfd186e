"""Broadcasts the leading dims, flattens them into one batch for torch.bmm, and reshapes back; projections made with setattr."""

import math  # noqa: I001

import torch
from torch import nn

from kata.earlier.softmax import softmax  # kata 9.1


def scaled_dot_product_attention(q, k, v, mask=None):
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    q_len, d_k = q.shape[-2:]
    k_len, d_v = v.shape[-2:]
    q3 = q.expand(*lead, q_len, d_k).reshape(-1, q_len, d_k)
    k3 = k.expand(*lead, k_len, d_k).reshape(-1, k_len, d_k)
    v3 = v.expand(*lead, k_len, d_v).reshape(-1, k_len, d_v)

    scores = torch.bmm(q3, k3.transpose(1, 2)) / math.sqrt(d_k)
    if mask is not None:
        m3 = mask.expand(*lead, q_len, k_len).reshape(-1, q_len, k_len)
        scores = scores.masked_fill(m3.logical_not(), -math.inf)
        weights = softmax(scores, dim=-1)
        weights = weights.masked_fill(m3.logical_not(), 0.0)  # also turns the NaN of fully blocked rows into 0
    else:
        weights = softmax(scores, dim=-1)
    out = torch.bmm(weights, v3)
    return out.reshape(*lead, q_len, d_v), weights.reshape(*lead, q_len, k_len)


class AttentionHead(nn.Module):
    def __init__(self, d_model: int, d_head: int):
        super().__init__()
        for name in ("w_q", "w_k", "w_v"):
            setattr(self, name, nn.Linear(d_model, d_head))
        self.attn_weights = None

    def forward(self, x, context=None, mask=None):
        if context is None:
            context = x
        q = self.w_q(x)
        k = self.w_k(context)
        v = self.w_v(context)
        out, w = scaled_dot_product_attention(q, k, v, mask)
        self.attn_weights = w
        return out
