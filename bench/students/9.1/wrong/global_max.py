"""Subtracts the maximum of the whole tensor instead of the maximum along dim."""

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    # shift by the biggest value so exp never overflows
    m = x.max()
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True)
