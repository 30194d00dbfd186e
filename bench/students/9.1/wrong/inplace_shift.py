"""Subtracts the max in place (x -= m), which changes the caller's tensor."""

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    m, _ = torch.max(x, dim=dim, keepdim=True)
    x -= m
    x = torch.exp(x)
    return x / torch.sum(x, dim=dim, keepdim=True)
