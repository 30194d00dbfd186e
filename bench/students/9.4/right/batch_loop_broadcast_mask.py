"""Loops over the batch: splits each sequence's heads with view + transpose(0, 1), slices its broadcast mask."""

import torch  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)
from torch import nn

# Your attention from kata 9.3: when you run this file it is your own exercises/9.3-attention/exercise.py;
# when kata 9.4 is graded it is the reference solution, so a mistake in 9.3 costs points only there.
from kata.earlier.attention import scaled_dot_product_attention  # kata 9.3


class MultiHeadAttention(nn.Module):
    """Multi-head attention: n_heads scaled dot-product attentions in parallel, then W^O."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads:
            raise ValueError("n_heads has to divide d_model")
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(p=dropout)
        self.attn_weights = None

    def _split(self, t: torch.Tensor) -> torch.Tensor:
        """One sequence (len, d_model) -> (n_heads, len, d_k)."""
        return t.view(t.shape[0], self.n_heads, self.d_k).transpose(0, 1)

    def _attend_one(self, q, k, v, mask):
        out, w = scaled_dot_product_attention(self._split(q), self._split(k), self._split(v), mask)
        if self.training:
            out = self.attn_dropout(w) @ self._split(v)
        merged = out.transpose(0, 1).reshape(q.shape[0], -1)  # (len, n_heads * d_k), head 0 first
        return merged, w

    def forward(self, query, key, value, mask=None):
        """query (batch, q_len, d_model), key/value (batch, k_len, d_model) -> (batch, q_len, d_model)."""
        q_all, k_all, v_all = self.w_q(query), self.w_k(key), self.w_v(value)
        batch, q_len, k_len = query.size(0), query.size(1), key.size(1)
        if mask is not None:
            # a mask broadcasts to (batch, n_heads, q_len, k_len); make that explicit, then slice sequence i
            mask = mask.broadcast_to(batch, self.n_heads, q_len, k_len)
        outs, weights = [], []
        for i in range(batch):
            o, w = self._attend_one(q_all[i], k_all[i], v_all[i], None if mask is None else mask[i])
            outs.append(o)
            weights.append(w)
        self.attn_weights = torch.stack(weights)
        return self.w_o(torch.stack(outs))
