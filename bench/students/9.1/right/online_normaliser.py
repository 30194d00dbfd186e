"""One pass over dim keeping a running max and a rescaled running sum (the 'online softmax' trick), then normalises."""

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    if x.dim() == 0:
        return torch.ones_like(x)
    d = dim % x.dim()
    neg_inf = float("-inf")
    run_max = torch.full_like(x.select(d, 0), neg_inf)
    run_sum = torch.zeros_like(run_max)
    for x_i in x.unbind(d):
        new_max = torch.maximum(run_max, x_i)
        # while a row has only seen -inf, shift by 0 instead (-inf - -inf would be NaN)
        shift = torch.where(new_max == neg_inf, torch.zeros_like(new_max), new_max)
        run_sum = run_sum * torch.exp(run_max - shift) + torch.exp(x_i - shift)
        run_max = new_max
    shift = torch.where(run_max == neg_inf, torch.zeros_like(run_max), run_max)
    return torch.exp(x - shift.unsqueeze(d)) / run_sum.unsqueeze(d)
