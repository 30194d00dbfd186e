"""Sanity checks of kata 9.1: quick shape checks (`python sanity.py` here; the kata's notebook runs them too).

They are no grading: `kata check 9.1` checks far more.
"""

import torch
from exercise import softmax

x = torch.randn(2, 3, 5)
out = softmax(x, dim=-1)
assert out.shape == x.shape, f"softmax(x) should keep x's shape {tuple(x.shape)}, got {tuple(out.shape)}"
assert torch.allclose(out.sum(dim=-1), torch.ones(2, 3)), "softmax(x, dim=-1) should sum to 1 along the last dim"
assert torch.allclose(softmax(x, dim=0).sum(dim=0), torch.ones(3, 5)), "softmax(x, dim=0) should sum to 1 along dim 0"
print("softmax: shapes and sums look right")
