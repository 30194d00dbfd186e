"""Sums without keepdim=True, so the denominator broadcasts against the wrong axis."""

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    m = x.amax(dim=dim, keepdim=True)
    e = torch.exp(x - m)
    total = e.sum(dim=dim)
    return e / total
