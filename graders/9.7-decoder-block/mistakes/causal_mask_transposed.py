"""Planted mistake: the causal mask is the upper triangle (transposed): the future visible, the past hidden."""
# expect: causal-mask-transposed


def causal_mask(size, device=None):
    return torch.triu(torch.ones(size, size, dtype=torch.bool, device=device))
