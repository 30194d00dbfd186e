"""Scales both q and k by d_k ** -0.25 (their product carries 1/sqrt(d_k)), uses k.mT, zeroes blocked weights."""

import math  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)

import torch
from torch import nn

# Your softmax from kata 9.1: when you run this file it is your own exercises/9.1-softmax/exercise.py;
# when kata 9.3 is graded it is the reference solution, so a mistake in 9.1 costs points only there.
from kata.earlier.softmax import softmax  # kata 9.1


def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(d_k)) v, with blocked keys removed from the softmax.

    Returns (output (..., q_len, d_v), weights (..., q_len, k_len)).
    """
    d_k = k.shape[-1]
    s = 1.0 / math.sqrt(math.sqrt(d_k))  # d_k ** -0.25 on each side keeps the scores' size down early
    scores = (q * s) @ (k * s).mT
    if mask is not None:
        blocked = ~mask
        scores = scores.masked_fill(blocked, -math.inf)
    p = softmax(scores, dim=-1)
    if mask is not None:
        p = p.masked_fill(blocked, 0.0)  # NaN rows (nothing allowed) become 0, others are already 0 there
    return p @ v, p


class AttentionHead(nn.Module):
    """One attention head: project, then attend."""

    def __init__(self, d_model, d_head):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_head, bias=True)
        self.w_k = nn.Linear(d_model, d_head, bias=True)
        self.w_v = nn.Linear(d_model, d_head, bias=True)
        self.attn_weights = None

    def forward(self, x, context=None, mask=None):
        """(batch, q_len, d_model) -> (batch, q_len, d_head); keys and values from context (default x)."""
        kv = context if context is not None else x
        output, self.attn_weights = scaled_dot_product_attention(self.w_q(x), self.w_k(kv), self.w_v(kv), mask)
        return output
