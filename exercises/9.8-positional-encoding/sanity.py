"""Sanity checks of kata 9.8: quick shape checks (`python sanity.py` here; the kata's notebook runs them too).

They are no grading: `kata check 9.8` checks far more.
"""

import torch
from exercise import PositionalEncoding, TokenEmbedding, sinusoidal_positional_encoding

pe = sinusoidal_positional_encoding(10, 16)
assert pe.shape == (10, 16), f"the table should be (max_len, d_model) = (10, 16), got {tuple(pe.shape)}"
assert torch.allclose(pe[0, 0::2], torch.zeros(8)) and torch.allclose(pe[0, 1::2], torch.ones(8)), (
    "position 0: sin(0) = 0 in the even columns, cos(0) = 1 in the odd ones")
encoding = PositionalEncoding(16, max_len=50, dropout=0.0)
assert encoding(torch.zeros(2, 5, 16)).shape == (2, 5, 16), "PositionalEncoding keeps (batch, len, d_model)"
embed = TokenEmbedding(100, 16)
tokens = torch.randint(0, 100, (2, 5))
assert embed(tokens).shape == (2, 5, 16), "TokenEmbedding maps (batch, len) to (batch, len, d_model)"
print("sinusoidal_positional_encoding, PositionalEncoding, TokenEmbedding: shapes look right")
