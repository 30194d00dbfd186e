"""Implements ReLU as its own torch.autograd.Function (backward: grad where the input was positive)."""

import torch
from torch import nn


class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp):
        ctx.save_for_backward(inp)
        return inp.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (inp,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[inp <= 0] = 0
        return grad_input


class FeedForward(nn.Module):
    """Position-wise feed-forward network: linear_2(dropout(relu(linear_1(x)))).

    Submodules:
        linear_1: nn.Linear(d_model, d_ff), W_1 and b_1.
        linear_2: nn.Linear(d_ff, d_model), W_2 and b_2.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_model) -> (..., d_model); nn.Linear acts on the last dimension."""
        return self.linear_2(self.dropout(MyReLU.apply(self.linear_1(x))))
