"""Never reshapes: per head, zeroes the other heads' features of q and v (a block mask), rescales q, sums the heads."""

import torch  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)
from torch import nn

# Your attention from kata 9.3: when you run this file it is your own exercises/9.3-attention/exercise.py;
# when kata 9.4 is graded it is the reference solution, so a mistake in 9.3 costs points only there.
from kata.earlier.attention import scaled_dot_product_attention  # kata 9.3


class MultiHeadAttention(nn.Module):
    """Multi-head attention: n_heads scaled dot-product attentions in parallel, then W^O.

    Head i only sees features [i*d_k, (i+1)*d_k). Instead of view/transpose, this version multiplies q and v
    by a 0/1 mask over the features for each head: q_masked . k = q_i . k_i, and the masked values put each
    head's output straight into its own slots of the concatenation, so the heads just add up.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        self.attn_weights = None

    def _feature_mask(self, head: int, like: torch.Tensor) -> torch.Tensor:
        m = torch.zeros(self.d_model, dtype=like.dtype, device=like.device)
        m[head * self.d_k : (head + 1) * self.d_k] = 1
        return m

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """(batch, q_len, d_model) -> (batch, q_len, d_model); weights (batch, n_heads, q_len, k_len) kept."""
        batch, q_len, _ = query.shape
        k_len = key.shape[1]
        q, k, v = self.w_q(query), self.w_k(key), self.w_v(value)
        # kata 9.3 divides by sqrt(q.size(-1)) = sqrt(d_model); the head needs sqrt(d_k) = sqrt(d_model / h)
        q = q * (self.n_heads**0.5)
        if mask is not None:
            mask = torch.broadcast_to(mask, (batch, self.n_heads, q_len, k_len))
        concat = torch.zeros(batch, q_len, self.d_model, dtype=v.dtype, device=v.device)
        all_weights = []
        for h in range(self.n_heads):
            fm = self._feature_mask(h, q)
            v_h = v * fm
            out_h, w_h = scaled_dot_product_attention(q * fm, k, v_h, None if mask is None else mask[:, h])
            all_weights.append(w_h)
            if self.training:
                out_h = self.dropout(w_h) @ v_h
            concat = concat + out_h  # zero outside this head's features
        self.attn_weights = torch.stack(all_weights, dim=1)
        return self.w_o(concat)
