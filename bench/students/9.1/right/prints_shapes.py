"""A correct softmax that prints the shapes it was given on every call."""

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    print(f"softmax: x {tuple(x.shape)} {x.dtype}, dim={dim}")
    max_vals, _ = x.max(dim=dim, keepdim=True)
    exp_x = torch.exp(x - max_vals)
    return exp_x / exp_x.sum(dim=dim, keepdim=True)
