"""Hand-written inverted dropout on the weights (Bernoulli keep mask, / (1 - p), training only); heads via permute."""

import torch  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)
from torch import nn

# Your attention from kata 9.3: when you run this file it is your own exercises/9.3-attention/exercise.py;
# when kata 9.4 is graded it is the reference solution, so a mistake in 9.3 costs points only there.
from kata.earlier.attention import scaled_dot_product_attention  # kata 9.3


class MultiHeadAttention(nn.Module):
    """Multi-head attention: n_heads scaled dot-product attentions in parallel, then W^O."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if n_heads <= 0 or d_model % n_heads != 0:
            raise ValueError(f"cannot split d_model={d_model} into {n_heads} heads")
        self.d_model, self.n_heads = d_model, n_heads
        self.head_dim = d_model // n_heads
        self.p = float(dropout)
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.attn_weights = None

    def _heads(self, t):
        b, n, _ = t.shape
        return t.reshape(b, n, self.n_heads, self.head_dim).permute(0, 2, 1, 3)  # (b, h, n, d_k)

    def _drop(self, w):
        if not self.training or self.p == 0.0:
            return w
        if self.p >= 1.0:
            return torch.zeros_like(w)
        keep = torch.rand_like(w) >= self.p  # same dtype and device as the weights
        return w * keep / (1.0 - self.p)

    def forward(self, query, key, value, mask=None):
        """query (batch, q_len, d_model), key/value (batch, k_len, d_model) -> (batch, q_len, d_model)."""
        q, k, v = self._heads(self.w_q(query)), self._heads(self.w_k(key)), self._heads(self.w_v(value))
        out, w = scaled_dot_product_attention(q, k, v, mask)
        self.attn_weights = w
        if self.training and self.p > 0:
            out = self._drop(w) @ v
        b, _, q_len, _ = out.shape
        out = out.permute(0, 2, 1, 3).reshape(b, q_len, self.d_model)
        return self.w_o(out)
