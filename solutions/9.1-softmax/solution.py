"""Kata 9.1: a numerically stable softmax.

Attention turns similarity scores into weights with a softmax (Vaswani et al., 2017, eq. 1):

    softmax(x)_i = exp(x_i) / sum_j exp(x_j)

Written like that it overflows: exp(89.0) is already `inf` in float32, and inf / inf is NaN. Softmax
does not change when the same constant is added to every input (the factor exp(c) cancels between
numerator and denominator), so subtract the largest input first:

    softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m),    m = max_j x_j

Now every exponent is <= 0, every exp lies in (0, 1], and the largest is exactly 1, so the sum is at
least 1: no overflow and no division by zero.

Public names (the kata's contract):
    softmax(x, dim=-1) -> Tensor of the same shape, dtype and device as `x`; the values along `dim`
    are positive and sum to 1. `x` is not modified.
"""

import torch


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax of `x` along `dim` (negative dims count from the end).

    Args:
        x:   any shape, floating point, e.g. (batch, q_len, k_len) attention scores.
        dim: the dimension whose entries become a probability distribution.

    Returns:
        A tensor of x's shape, dtype and device whose slices along `dim` sum to 1.
    """
    ### BEGIN SOLUTION
    # m: x's shape with `dim` reduced to size 1, so it broadcasts back over x.
    m = x.amax(dim=dim, keepdim=True)
    # Shifted exponents are <= 0, so exp stays in (0, 1]: no overflow.
    e = torch.exp(x - m)  # same shape as x
    return e / e.sum(dim=dim, keepdim=True)
    ### END SOLUTION
