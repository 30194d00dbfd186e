"""Planted mistake: the student's own causal mask, built with triu: it keeps the future and hides the past."""
# expect: fault-in-model-call


def causal_mask(size, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device).triu()  # (size, size)
