"""Normalises dim by hand, multiplies by the reciprocal of the sum, with a debug print left in."""

import torch

DEBUG = False


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    if dim < 0:
        dim = x.dim() + dim
    shifted = x - torch.amax(x, dim=dim, keepdim=True)
    numer = torch.exp(shifted)
    denom = torch.sum(numer, dim=dim, keepdim=True)
    if DEBUG:
        print("softmax", tuple(x.shape), "dim", dim, "denominator min", denom.min().item())
    return numer * denom.reciprocal()
