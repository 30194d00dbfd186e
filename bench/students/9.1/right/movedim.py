"""Moves dim to the end, normalises the last axis with a helper, and moves it back."""

import torch


def _softmax_last(t: torch.Tensor) -> torch.Tensor:
    biggest = t.max(dim=-1, keepdim=True).values
    exps = (t - biggest).exp()
    return exps / exps.sum(dim=-1, keepdim=True)


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    moved = torch.movedim(x, dim, -1)
    out = _softmax_last(moved)
    return torch.movedim(out, -1, dim)
