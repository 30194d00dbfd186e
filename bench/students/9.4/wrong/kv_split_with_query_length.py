"""Splits key and value with the query's length (one seq_len variable for all three): fails when q_len != k_len."""

import torch  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)
from torch import nn

# Your attention from kata 9.3: when you run this file it is your own exercises/9.3-attention/exercise.py;
# when kata 9.4 is graded it is the reference solution, so a mistake in 9.3 costs points only there.
from kata.earlier.attention import scaled_dot_product_attention  # kata 9.3


class MultiHeadAttention(nn.Module):
    """Multi-head attention: n_heads scaled dot-product attentions in parallel, then W^O.

    Attributes:
        w_q, w_k, w_v: nn.Linear(d_model, d_model), all heads' projections side by side.
        w_o:           nn.Linear(d_model, d_model), mixes the concatenated heads.
        attn_weights:  (batch, n_heads, q_len, k_len) weights of the last forward (None before).
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        self.attn_weights = None

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Attend from `query` to `key`/`value` with every head, then mix the heads with w_o."""
        batch, seq_len, _ = query.shape

        def split(t):
            return t.view(batch, seq_len, self.n_heads, self.d_k).transpose(1, 2)

        q, k, v = split(self.w_q(query)), split(self.w_k(key)), split(self.w_v(value))
        out, self.attn_weights = scaled_dot_product_attention(q, k, v, mask)
        if self.training:
            out = self.dropout(self.attn_weights) @ v
        out = out.transpose(1, 2).contiguous().view(batch, seq_len, self.d_model)
        return self.w_o(out)
