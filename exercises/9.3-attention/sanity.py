"""Sanity checks of kata 9.3: quick shape checks (`python sanity.py` here; the kata's notebook runs them too).

They are no grading: `kata check 9.3` checks far more.
"""

import torch
from exercise import AttentionHead, scaled_dot_product_attention

q, k, v = torch.randn(2, 5, 8), torch.randn(2, 7, 8), torch.randn(2, 7, 3)
out, weights = scaled_dot_product_attention(q, k, v)
assert out.shape == (2, 5, 3), f"output should be (batch, q_len, d_v) = (2, 5, 3), got {tuple(out.shape)}"
assert weights.shape == (2, 5, 7), f"weights should be (batch, q_len, k_len) = (2, 5, 7), got {tuple(weights.shape)}"
assert torch.allclose(weights.sum(dim=-1), torch.ones(2, 5)), "each query's weights should sum to 1"
mask = torch.ones(5, 7, dtype=torch.bool).tril()  # True = may attend
_, weights = scaled_dot_product_attention(q, k, v, mask)
assert (weights[:, ~mask] == 0).all(), "blocked keys (mask False) should get weight 0"
head = AttentionHead(16, 8)
x = torch.randn(2, 5, 16)
assert head(x).shape == (2, 5, 8), "AttentionHead(16, 8) should map (2, 5, 16) to (2, 5, 8)"
assert head.attn_weights.shape == (2, 5, 5), "attn_weights should be (batch, q_len, k_len)"
print("scaled_dot_product_attention, AttentionHead: shapes look right")
