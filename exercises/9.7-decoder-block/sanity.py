"""Sanity checks of kata 9.7: quick shape checks (`python sanity.py` here; the kata's notebook runs them too).

They are no grading: `kata check 9.7` checks far more.
"""

import torch
from exercise import Decoder, DecoderBlock, causal_mask

mask = causal_mask(4)
assert mask.dtype == torch.bool and mask.shape == (4, 4), "causal_mask(4) should be a (4, 4) bool tensor"
assert mask[2, 1] and not mask[1, 2], "True on and below the diagonal: position 2 may see 1, 1 may not see 2"
x, memory = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
src_mask = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])[:, None, None, :]  # (batch, 1, 1, src_len)
block = DecoderBlock(16, 4, 32, dropout=0.0)
assert block(x, memory, src_mask, causal_mask(5)).shape == (2, 5, 16), "DecoderBlock keeps (batch, tgt_len, d_model)"
decoder = Decoder(2, 16, 4, 32, dropout=0.0)
assert len(decoder.layers) == 2, "Decoder(2, ...) should hold 2 blocks in `layers`"
assert decoder(x, memory, src_mask, causal_mask(5)).shape == (2, 5, 16), "Decoder keeps (batch, tgt_len, d_model)"
print("causal_mask, DecoderBlock, Decoder: shapes look right")
