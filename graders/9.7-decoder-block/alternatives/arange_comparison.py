"""Alternative: the causal mask from comparing position indices, j <= i."""


def causal_mask(size, device=None):
    positions = torch.arange(size, device=device)
    return positions[None, :] <= positions[:, None]  # (size, size): key j may be seen by query i when j <= i
