"""Sanity checks of kata 9.6: quick shape checks (`python sanity.py` here; the kata's notebook runs them too).

They are no grading: `kata check 9.6` checks far more.
"""

import torch
from exercise import Encoder, EncoderBlock

x = torch.randn(2, 5, 16)
padding = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])[:, None, None, :]  # (batch, 1, 1, len)
block = EncoderBlock(16, 4, 32, dropout=0.0)
assert block(x, padding).shape == (2, 5, 16), "EncoderBlock should keep the shape (batch, len, d_model)"
encoder = Encoder(2, 16, 4, 32, dropout=0.0, norm_first=True)
assert len(encoder.layers) == 2, "Encoder(2, ...) should hold 2 blocks in `layers`"
assert encoder(x, padding).shape == (2, 5, 16), "Encoder should keep the shape (batch, len, d_model)"
print("EncoderBlock, Encoder: shapes look right")
