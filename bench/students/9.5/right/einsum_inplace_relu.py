"""Applies the layers' weights with einsum, adds the biases, and does the ReLU in place on the fresh hidden tensor."""

import torch
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.drop = nn.Dropout(p=dropout)

    def extra_repr(self) -> str:
        return f"d_model={self.linear_1.in_features}, d_ff={self.linear_1.out_features}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # nn.Linear stores W as (out, in), so x W^T is "...i,oi->...o"
        h = torch.einsum("...i,oi->...o", x, self.linear_1.weight) + self.linear_1.bias
        h.relu_()  # h is a new tensor, so changing it in place is safe
        h = self.drop(h)
        return torch.einsum("...f,of->...o", h, self.linear_2.weight) + self.linear_2.bias
