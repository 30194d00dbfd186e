"""Uses torch.square and torch.addcmul(beta, gamma, x_hat); the module fills empty parameters in a reset_parameters method."""

import torch
from torch import nn


def layer_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    mu = torch.mean(x, dim=-1, keepdim=True)
    centred = x - mu
    var = torch.square(centred).mean(dim=-1, keepdim=True)
    x_hat = centred / torch.sqrt(var + eps)
    return torch.addcmul(beta, gamma, x_hat)  # beta + gamma * x_hat


class LayerNorm(nn.Module):
    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.d_model = d_model
        self.eps = eps
        self.gamma = nn.Parameter(torch.empty(d_model))
        self.beta = nn.Parameter(torch.empty(d_model))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.ones_(self.gamma)
        nn.init.zeros_(self.beta)

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layer_norm(x, self.gamma, self.beta, self.eps)
