"""Adds a float -inf bias for blocked keys (0 for rows with no allowed key), then multiplies the weights by the mask."""

import math  # noqa: I001

import torch
from torch import nn

from kata.earlier.softmax import softmax  # kata 9.1


def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.shape[-1]))
    if mask is not None:
        allowed = torch.broadcast_to(mask, scores.shape)
        row_has_key = allowed.any(dim=-1, keepdim=True)
        # -inf where blocked, except in rows where everything is blocked (those would give 0/0)
        bias = torch.zeros_like(scores).masked_fill(~allowed & row_has_key, float("-inf"))
        weights = softmax(scores + bias, dim=-1) * allowed.to(scores.dtype)
    else:
        weights = softmax(scores, dim=-1)
    return weights @ v, weights


class AttentionHead(nn.Module):
    def __init__(self, d_model: int, d_head: int):
        super().__init__()
        self.d_head = d_head
        self.w_q = nn.Linear(d_model, d_head)
        self.w_k = nn.Linear(d_model, d_head)
        self.w_v = nn.Linear(d_model, d_head)
        self.attn_weights: torch.Tensor | None = None

    def forward(
        self, x: torch.Tensor, context: torch.Tensor | None = None, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        src = x if context is None else context
        out, self.attn_weights = scaled_dot_product_attention(self.w_q(x), self.w_k(src), self.w_v(src), mask=mask)
        return out
