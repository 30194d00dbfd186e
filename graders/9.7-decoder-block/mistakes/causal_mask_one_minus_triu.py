"""Planted mistake: the causal mask as 1 - triu(bool ones, 1): arithmetic torch refuses on a bool mask."""
# expect: arithmetic-on-bool-mask


def causal_mask(size, device=None):
    return 1 - torch.triu(torch.ones(size, size, dtype=torch.bool, device=device), diagonal=1)
