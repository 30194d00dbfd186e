"""Uses torch.logsumexp: softmax = exp(x - logsumexp(x))."""

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return torch.exp(x - torch.logsumexp(x, dim=dim, keepdim=True))
