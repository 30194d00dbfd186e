"""Sanity checks of kata 9.4: quick shape checks (`python sanity.py` here; the kata's notebook runs them too).

They are no grading: `kata check 9.4` checks far more.
"""

import torch
from exercise import MultiHeadAttention

mha = MultiHeadAttention(16, 4)
x, memory = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
assert mha(x, x, x).shape == (2, 5, 16), "self-attention should map (2, 5, 16) to (2, 5, 16)"
assert mha.attn_weights.shape == (2, 4, 5, 5), "attn_weights should be (batch, heads, q_len, k_len)"
padding = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])[:, None, None, :]  # (batch, 1, 1, k_len)
assert mha(x, memory, memory, padding).shape == (2, 5, 16), "cross-attention should give (batch, q_len, d_model)"
assert mha.attn_weights.shape == (2, 4, 5, 7), "attn_weights should be (batch, heads, q_len, k_len)"
try:
    MultiHeadAttention(10, 4)
except ValueError:
    pass
else:
    raise AssertionError("MultiHeadAttention(10, 4) should raise ValueError: 10 is not divisible by 4")
print("MultiHeadAttention: shapes look right")
