"""Hand-written dropout that zeroes units with probability p but does not scale the survivors by 1 / (1 - p)."""

import torch
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.p = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.linear_1(x))
        if self.training and self.p > 0:
            keep = (torch.rand_like(h) > self.p).to(h.dtype)
            h = h * keep
        return self.linear_2(h)
