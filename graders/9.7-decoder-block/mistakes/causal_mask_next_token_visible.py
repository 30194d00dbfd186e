"""Planted mistake: the causal mask lets each position see the next token (diagonal=1)."""
# expect: causal-mask-next-token-visible


def causal_mask(size, device=None):
    return torch.tril(torch.ones(size, size, dtype=torch.bool, device=device), diagonal=1)
