"""Kata 9.4: multi-head attention.

One attention head computes ONE weighted average per query: it can follow one kind of relation at a
time (say "the previous word", or "the verb of this subject"). The paper runs h heads side by side, each
in its own smaller subspace, and lets a final linear layer mix what they found
(Vaswani et al., 2017, section 3.2.2):

    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

with W_i^Q, W_i^K in R^{d_model x d_k}, W_i^V in R^{d_model x d_v}, W^O in R^{h d_v x d_model} and
d_k = d_v = d_model / h (the paper: d_model = 512, h = 8, d_k = 64). Splitting d_model over the heads
keeps the cost of all h heads about that of one full-size head.

The h per-head projections are done at once: W_q is ONE nn.Linear(d_model, d_model) whose output
columns [i*d_k, (i+1)*d_k) are head i's queries. The heads then become a batch dimension:

    (batch, len, d_model)                      w_q(query)
    -> view      (batch, len, n_heads, d_k)    the last dim cut into n_heads chunks of d_k
    -> transpose (batch, n_heads, len, d_k)    heads next to batch: every head attends on its own
    -> attention (batch, n_heads, q_len, d_k)  scaled_dot_product_attention broadcasts over both
    -> transpose (batch, q_len, n_heads, d_k)
    -> view      (batch, q_len, d_model)       Concat(head_1, ..., head_h), head 1 first
    -> w_o       (batch, q_len, d_model)

Viewing (batch, len, d_model) directly as (batch, n_heads, len, d_k) has the same number of elements
but cuts the sequence, not the features, into heads: each "head" would then mix positions. The
transpose is what keeps each position's d_k features together.

Self-attention passes the same sequence as query, key and value; cross-attention (decoder -> encoder)
passes the decoder's states as query and the encoder's output (the memory) as key and value, so q_len
and k_len may differ.

Public names (the kata's contract):
    MultiHeadAttention(d_model, n_heads, dropout=0.0): nn.Linear(d_model, d_model) projections `w_q`,
        `w_k`, `w_v`, `w_o` (4 (d_model^2 + d_model) parameters); ValueError when d_model is not
        divisible by n_heads.
        forward(query, key, value, mask=None): query (batch, q_len, d_model), key and value
        (batch, k_len, d_model), mask bool broadcastable to (batch, n_heads, q_len, k_len), True = may
        attend (padding mask (batch, 1, 1, k_len), causal mask (q_len, k_len)).
        Returns (batch, q_len, d_model); the weights (batch, n_heads, q_len, k_len) of the last forward
        (before dropout) are kept in `attn_weights`.
"""

import torch  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)
from torch import nn

# Your attention from kata 9.3: when you run this file it is your own exercises/9.3-attention/exercise.py;
# when kata 9.4 is graded it is the reference solution, so a mistake in 9.3 costs points only there.
from kata.earlier.attention import scaled_dot_product_attention  # kata 9.3


class MultiHeadAttention(nn.Module):
    """Multi-head attention: n_heads scaled dot-product attentions in parallel, then W^O.

        MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,  head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

    Args:
        d_model: size of the input and output vectors.
        n_heads: number of heads h; each works in d_k = d_model // n_heads dimensions.
        dropout: dropout probability on the attention weights (training only).

    Attributes:
        w_q, w_k, w_v: nn.Linear(d_model, d_model), all heads' projections side by side.
        w_o:           nn.Linear(d_model, d_model), mixes the concatenated heads.
        attn_weights:  (batch, n_heads, q_len, k_len) weights of the last forward (None before).

    Raises:
        ValueError: when d_model is not divisible by n_heads.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError()

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Attend from `query` to `key`/`value` with every head, then mix the heads with w_o.

        Args:
            query: (batch, q_len, d_model).
            key:   (batch, k_len, d_model).
            value: (batch, k_len, d_model).
            mask:  optional bool, broadcastable to (batch, n_heads, q_len, k_len); True = may attend.

        Returns:
            (batch, q_len, d_model). The weights (batch, n_heads, q_len, k_len) are kept in
            self.attn_weights.
        """
        # YOUR CODE HERE
        raise NotImplementedError()
