"""Planted mistake: the causal mask follows nn.Transformer's convention (True = blocked)."""
# expect: causal-mask-inverted


def causal_mask(size, device=None):
    return torch.triu(torch.ones(size, size, dtype=torch.bool, device=device), diagonal=1)
