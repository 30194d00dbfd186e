"""Caches the context's keys and values on the first call (a "KV cache"), so later calls reuse stale keys and values."""

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
    scores = q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
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
        # the keys and values of the context only need computing once (like a decoder's KV cache)
        self._k_cache = None
        self._v_cache = None

    def forward(
        self, x: torch.Tensor, context: torch.Tensor | None = None, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Attend from x to context (self-attention when context is None)."""
        source = x if context is None else context
        if self._k_cache is None:
            self._k_cache = self.w_k(source)
            self._v_cache = self.w_v(source)
        out, self.attn_weights = scaled_dot_product_attention(self.w_q(x), self._k_cache, self._v_cache, mask)
        return out
