"""ReLU via torch.where and a hand-written inverted dropout: Bernoulli keep mask, survivors scaled by 1 / (1 - p), training only."""

import torch
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.p = dropout

    def _dropout(self, h: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return h
        if self.p == 1.0:
            return torch.zeros_like(h)
        keep = torch.rand_like(h) >= self.p  # each unit kept with probability 1 - p
        return h * keep / (1.0 - self.p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.linear_1(x)
        h = torch.where(h > 0, h, torch.zeros_like(h))
        return self.linear_2(self._dropout(h))
