"""Takes the max without keepdim (detached, the shift does not change the result) and unsqueezes it back at dim."""

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    if x.dim() == 0:
        return torch.ones_like(x)  # a single number is a distribution of one element
    d = dim if dim >= 0 else dim + x.dim()  # e.g. dim=-1 on a 3-d tensor -> 2
    m = torch.max(x, dim=d).values.detach().unsqueeze(d)
    e = torch.exp(x - m)
    total = torch.sum(e, dim=d).unsqueeze(d)
    return e / total
