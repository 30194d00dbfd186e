"""Clones x, then shifts by amax and exponentiates in place on the copy (x is untouched), then divides by the sum."""

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    out = x.clone()  # work on a copy so the in-place ops below never touch x
    out.sub_(x.amax(dim=dim, keepdim=True))
    out.exp_()
    return out / out.sum(dim=dim, keepdim=True)
