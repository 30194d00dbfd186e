"""Planted mistake: the causal mask hides the diagonal too (strictly lower triangle)."""
# expect: causal-mask-diagonal-blocked


def causal_mask(size, device=None):
    return torch.tril(torch.ones(size, size, dtype=torch.bool, device=device), diagonal=-1)
