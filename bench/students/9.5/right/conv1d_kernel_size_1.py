"""Runs both layers as the paper's 'two convolutions with kernel size 1' with F.conv1d on the nn.Linear weights."""

import torch
from torch import nn
import torch.nn.functional as F


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    @staticmethod
    def _conv1x1(t: torch.Tensor, layer: nn.Linear) -> torch.Tensor:
        # t: (1, in, positions); a kernel of size 1 is the Linear's (out, in) weight with a trailing 1
        return F.conv1d(t, layer.weight.unsqueeze(-1), layer.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        t = x.reshape(-1, x.shape[-1]).transpose(0, 1).unsqueeze(0)  # (1, d_model, positions)
        h = self.dropout(torch.relu(self._conv1x1(t, self.linear_1)))
        y = self._conv1x1(h, self.linear_2)  # (1, d_model, positions)
        return y.squeeze(0).transpose(0, 1).reshape(*lead, -1)
