"""Always normalises over the last dimension, whatever dim is passed."""

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    m = x.max(-1, keepdim=True).values
    e = torch.exp(x - m)
    return e / e.sum(-1, keepdim=True)
