"""Alternative: the causal mask built by torch.vmap, row i = positions <= i (lazy imports on the meta device)."""


def causal_mask(size, device=None):
    positions = torch.arange(size, device=device)
    return torch.vmap(lambda i: positions <= i)(positions)  # (size, size): row i is query i, True for keys j <= i
