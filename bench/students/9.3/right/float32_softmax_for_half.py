"""Computes scores and softmax in float32 for float16/bfloat16 inputs (mixed-precision style), casts back."""

import math  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)

import torch
from torch import nn
import torch.nn.functional as F

# Your softmax from kata 9.1: when you run this file it is your own exercises/9.1-softmax/exercise.py;
# when kata 9.3 is graded it is the reference solution, so a mistake in 9.1 costs points only there.
from kata.earlier.softmax import softmax  # kata 9.1

_LOW_PRECISION = (torch.float16, torch.bfloat16)


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
    in_dtype = q.dtype
    # half precision: do the sensitive part (dot products, exp, sums) in float32, like autocast does
    work_dtype = torch.float32 if in_dtype in _LOW_PRECISION else in_dtype
    qw, kw = q.to(work_dtype), k.to(work_dtype)
    scores = qw @ kw.transpose(-2, -1) * (1.0 / math.sqrt(q.shape[-1]))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)  # also turns the NaN of fully blocked rows into 0
    weights = weights.to(in_dtype)
    output = weights @ v
    return output, weights


class AttentionHead(nn.Module):
    """One attention head: project, then attend (projections applied with F.linear)."""

    def __init__(self, d_model: int, d_head: int):
        super().__init__()
        self.d_head = d_head
        self.w_q = nn.Linear(d_model, d_head)
        self.w_k = nn.Linear(d_model, d_head)
        self.w_v = nn.Linear(d_model, d_head)
        self.attn_weights: torch.Tensor | None = None

    @staticmethod
    def _project(layer: nn.Linear, t: torch.Tensor) -> torch.Tensor:
        return F.linear(t, layer.weight, layer.bias)

    def forward(
        self, x: torch.Tensor, context: torch.Tensor | None = None, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Attend from x to context (self-attention when context is None)."""
        source = x if context is None else context
        out, weights = scaled_dot_product_attention(
            self._project(self.w_q, x), self._project(self.w_k, source), self._project(self.w_v, source), mask
        )
        self.attn_weights = weights
        return out
