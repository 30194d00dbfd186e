"""Normalises dim with a modulo and asserts, finds the max with torch.topk(k=1), then exp / sum."""

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax of `x` along `dim` (negative dims count from the end).

    Args:
        x:   any shape, floating point, e.g. (batch, q_len, k_len) attention scores.
        dim: the dimension whose entries become a probability distribution.

    Returns:
        A tensor of x's shape, dtype and device whose slices along `dim` sum to 1.
    """
    assert x.is_floating_point(), f"softmax needs a floating point tensor, got {x.dtype}"
    ndim = max(x.dim(), 1)
    assert -ndim <= dim < ndim, f"dim {dim} out of range for a {x.dim()}-d tensor"
    dim = dim % ndim
    biggest = torch.topk(x, k=1, dim=dim).values  # keeps dim, with size 1
    numerators = torch.exp(x - biggest)
    denominator = torch.sum(numerators, dim=dim, keepdim=True)
    out = numerators / denominator
    assert out.shape == x.shape
    return out
