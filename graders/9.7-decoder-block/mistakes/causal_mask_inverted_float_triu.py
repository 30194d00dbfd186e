"""Planted mistake: the causal mask as ~triu of float ones: ~ is a bit operator, undefined on floats."""
# expect: bit-operator-on-floats


def causal_mask(size, device=None):
    return ~torch.triu(torch.ones(size, size, device=device), diagonal=1)
