"""Converts the input to float32 first, so a float64 input comes back as float32."""

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    x = x.float()  # make sure we work in floating point
    m = x.amax(dim=dim, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True)
