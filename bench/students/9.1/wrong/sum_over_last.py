"""Shifts by the max along dim but divides by the sum over the last dimension."""

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)
