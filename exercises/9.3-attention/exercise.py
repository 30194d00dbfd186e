"""Kata 9.3: scaled dot-product attention and one attention head.

Attention is a soft dictionary look-up. Every position asks a question (its query q), every position
advertises what it holds (its key k) and what it will hand over (its value v). A query scores every key
by a dot product, softmax turns the scores of one query into weights that sum to 1, and the answer is
the weighted average of the values (Vaswani et al., 2017, eq. 1):

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

with Q of shape (q_len, d_k), K of shape (k_len, d_k) and V of shape (k_len, d_v).

Why divide by sqrt(d_k)? If the d_k components of q and k are independent with mean 0 and variance 1,
their dot product q . k = sum_i q_i k_i is a sum of d_k terms of variance 1, so its variance is d_k
and its typical size sqrt(d_k). With d_k = 64 the scores spread over about +-8 (and more): softmax then
puts nearly all the weight on one key, and its gradient, p_i (delta_ij - p_j), is almost zero
everywhere. Dividing by sqrt(d_k) brings the variance back to 1 whatever the head size.

A mask says which keys a query may look at. It is boolean, True = "may attend", and broadcasts to
(..., q_len, k_len): a padding mask (batch, 1, 1, k_len) hides padding keys, a causal mask
(q_len, k_len) hides the future. Blocked scores become -inf, so exp gives them a weight of exactly 0.
A query whose keys are ALL blocked has nothing to average: like `F.scaled_dot_product_attention` in
recent PyTorch, it gets all-zero weights and an all-zero output (a plain softmax of a row of -inf is
0 / 0 = NaN, which would then poison everything downstream).

One attention head learns what to ask, what to advertise and what to hand over: three linear maps
project the input (batch, seq, d_model) into queries, keys and values of size d_head. In
self-attention queries, keys and values all come from x; in cross-attention (the decoder looking at
the encoder's output) the keys and values come from another sequence, the context.

Public names (the kata's contract):
    scaled_dot_product_attention(q, k, v, mask=None) -> (output, weights)
        q (..., q_len, d_k), k (..., k_len, d_k), v (..., k_len, d_v), mask bool broadcastable to
        (..., q_len, k_len), True = may attend. output (..., q_len, d_v), weights (..., q_len, k_len):
        each row sums to 1 over the keys (or is all 0 when every key is blocked), exactly 0 on blocked
        keys. Inputs are not modified.
    AttentionHead(d_model, d_head): nn.Linear(d_model, d_head) projections `w_q`, `w_k`, `w_v`;
        forward(x, context=None, mask=None) -> (batch, q_len, d_head), keys and values from `context`
        (x itself when None); the last weights (batch, q_len, k_len) are kept in `attn_weights`.
"""

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
    # YOUR CODE HERE
    raise NotImplementedError()


class AttentionHead(nn.Module):
    """One attention head: project, then attend.

        head(x, context) = Attention(x W_q, c W_k, c W_v),   c = context if given, else x

    Args:
        d_model: size of the input vectors.
        d_head:  size of this head's queries, keys and values (d_k = d_v = d_head).

    Attributes:
        w_q, w_k, w_v: nn.Linear(d_model, d_head), with bias.
        attn_weights:  the weights (batch, q_len, k_len) of the last forward (None before the first).
    """

    def __init__(self, d_model: int, d_head: int):
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError()

    def forward(
        self, x: torch.Tensor, context: torch.Tensor | None = None, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Attend from x to context (self-attention when context is None).

        Args:
            x:       (batch, q_len, d_model), the positions that ask (queries).
            context: (batch, k_len, d_model), the positions looked at (keys and values); default x.
            mask:    optional bool, broadcastable to (batch, q_len, k_len); True = may attend.

        Returns:
            (batch, q_len, d_head). The weights (batch, q_len, k_len) are kept in self.attn_weights.
        """
        # YOUR CODE HERE
        raise NotImplementedError()
