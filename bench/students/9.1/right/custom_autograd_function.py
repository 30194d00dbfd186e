"""Wraps the softmax in a torch.autograd.Function with a hand-written backward, y * (g - sum(g * y))."""

import torch


class _StableSoftmax(torch.autograd.Function):
    """Forward: exp(x - max) / sum. Backward: the Jacobian-vector product of softmax, written by hand."""

    @staticmethod
    def forward(ctx, x, dim):
        shifted = x - x.amax(dim=dim, keepdim=True)
        e = torch.exp(shifted)
        y = e / e.sum(dim=dim, keepdim=True)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        # d y_i / d x_j = y_i (delta_ij - y_j)  =>  grad_x = y * (g - <g, y>)
        dot = (grad_out * y).sum(dim=ctx.dim, keepdim=True)
        return y * (grad_out - dot), None


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax of `x` along `dim` (negative dims count from the end).

    Args:
        x:   any shape, floating point, e.g. (batch, q_len, k_len) attention scores.
        dim: the dimension whose entries become a probability distribution.

    Returns:
        A tensor of x's shape, dtype and device whose slices along `dim` sum to 1.
    """
    return _StableSoftmax.apply(x, dim)
