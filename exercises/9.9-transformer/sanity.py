"""Sanity checks of kata 9.9: quick shape checks (`python sanity.py` here; the kata's notebook runs them too).

They are no grading: `kata check 9.9` checks far more.
"""

import torch
from exercise import Transformer, padding_mask

src = torch.tensor([[5, 6, 7, 8, 9, 3], [4, 5, 6, 0, 0, 0]])  # 0 is padding
tgt = torch.tensor([[1, 5, 6, 7, 2], [1, 4, 5, 2, 0]])
src_mask = padding_mask(src, 0)
assert src_mask.shape == (2, 1, 1, 6) and src_mask.dtype == torch.bool, "padding_mask is (batch, 1, 1, len), bool"
model = Transformer(20, 22, d_model=16, n_heads=4, n_layers=2, d_ff=32, dropout=0.0)
logits = model(src, tgt, src_mask)
assert logits.shape == (2, 5, 22), f"logits should be (batch, tgt_len, tgt_vocab) = (2, 5, 22): {tuple(logits.shape)}"
tied = Transformer(20, 20, d_model=16, n_heads=4, n_layers=2, d_ff=32, dropout=0.0, tie_embeddings=True)
untied = Transformer(20, 20, d_model=16, n_heads=4, n_layers=2, d_ff=32, dropout=0.0)
assert sum(p.numel() for p in tied.parameters()) < sum(p.numel() for p in untied.parameters()), (
    "tie_embeddings=True should share one matrix between the embeddings and the generator")
print("Transformer, padding_mask: shapes look right")
