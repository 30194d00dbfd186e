"""Planted mistake: the causal mask made of float ones on and below the diagonal (torch.ones is float by default):
the right positions in the wrong dtype. Its values are the course's True / False as 1 / 0, not nn.Transformer's
0 / -inf, so it must not be called inverted: the check fails on the dtype with no diagnosis."""
# expect: failed


def causal_mask(size, device=None):
    return torch.tril(torch.ones(size, size, device=device))
