"""Planted mistake: causal_mask builds the mask on the default device, whatever `device` says."""
# expect: causal-mask-device-ignored


def causal_mask(size, device=None):
    return torch.tril(torch.ones(size, size, dtype=torch.bool))
