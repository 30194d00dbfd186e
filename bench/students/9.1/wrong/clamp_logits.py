"""Clamps the logits to [-80, 80] before exp to stop the overflow, instead of subtracting the max."""

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    # exp(89) is inf in float32, so keep the exponents in a safe range
    e = torch.exp(torch.clamp(x, min=-80.0, max=80.0))
    return e / e.sum(dim=dim, keepdim=True)
