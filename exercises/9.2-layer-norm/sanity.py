"""Sanity checks of kata 9.2: quick shape checks (`python sanity.py` here; the kata's notebook runs them too).

They are no grading: `kata check 9.2` checks far more.
"""

import torch
from exercise import LayerNorm, layer_norm

x = torch.randn(2, 4, 8) * 3 + 1
out = layer_norm(x, torch.ones(8), torch.zeros(8))
assert out.shape == x.shape, f"layer_norm should keep x's shape {tuple(x.shape)}, got {tuple(out.shape)}"
assert torch.allclose(out.mean(dim=-1), torch.zeros(2, 4), atol=1e-5), "each position should have mean 0"
norm = LayerNorm(8)
assert tuple(norm.gamma.shape) == (8,) and tuple(norm.beta.shape) == (8,), "gamma and beta have shape (d_model,)"
assert norm(x).shape == x.shape, f"LayerNorm(8) should keep x's shape {tuple(x.shape)}"
print("layer_norm, LayerNorm: shapes look right")
