"""Blocks keys by boolean indexing, scores[~mask] = -inf, which only works for a mask of the scores' full shape."""

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

    Args:
        q:    (..., q_len, d_k) queries.
        k:    (..., k_len, d_k) keys.
        v:    (..., k_len, d_v) values (d_v may differ from d_k).
        mask: optional bool tensor broadcastable to (..., q_len, k_len); True = may attend.

    Returns:
        output:  (..., q_len, d_v), for each query the weighted average of the values.
        weights: (..., q_len, k_len), softmax over the keys (last dim); exactly 0 on blocked keys,
                 and all 0 (output 0 too) for a query whose keys are all blocked.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores[~mask] = float("-inf")
    weights = softmax(scores, dim=-1)
    weights = torch.nan_to_num(weights, nan=0.0)  # a query with no allowed key: 0 / 0 -> 0
    return weights @ v, weights


class AttentionHead(nn.Module):
    """One attention head: project, then attend.

    Attributes:
        w_q, w_k, w_v: nn.Linear(d_model, d_head), with bias.
        attn_weights:  the weights (batch, q_len, k_len) of the last forward (None before the first).
    """

    def __init__(self, d_model: int, d_head: int):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_head)
        self.w_k = nn.Linear(d_model, d_head)
        self.w_v = nn.Linear(d_model, d_head)
        self.attn_weights = None

    def forward(
        self, x: torch.Tensor, context: torch.Tensor | None = None, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Attend from x to context (self-attention when context is None)."""
        context = x if context is None else context
        out, self.attn_weights = scaled_dot_product_attention(self.w_q(x), self.w_k(context), self.w_v(context), mask)
        return out

