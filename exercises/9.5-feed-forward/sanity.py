"""Sanity checks of kata 9.5: quick shape checks (`python sanity.py` here; the kata's notebook runs them too).

They are no grading: `kata check 9.5` checks far more.
"""

import torch
from exercise import FeedForward

ffn = FeedForward(16, 64)
x = torch.randn(2, 5, 16)
assert ffn(x).shape == (2, 5, 16), "FeedForward(16, 64) should map (2, 5, 16) to (2, 5, 16)"
assert ffn.linear_1.out_features == 64 and ffn.linear_2.out_features == 16, "linear_1: d_model -> d_ff, linear_2 back"
print("FeedForward: shapes look right")
