"""Gives each sub-layer its own Dropout module and writes the two orders as separate methods."""

import torch  # noqa: I001
from torch import nn

from kata.earlier.feed_forward import FeedForward  # kata 9.5
from kata.earlier.layer_norm import LayerNorm  # kata 9.2
from kata.earlier.multi_head_attention import MultiHeadAttention  # kata 9.4


class EncoderBlock(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout=dropout)
        self.norm_1 = LayerNorm(d_model)
        self.norm_2 = LayerNorm(d_model)
        self.dropout_1 = nn.Dropout(dropout)
        self.dropout_2 = nn.Dropout(dropout)

    def _post(self, x, mask):
        x = self.norm_1(x + self.dropout_1(self.self_attn(x, x, x, mask)))
        return self.norm_2(x + self.dropout_2(self.ffn(x)))

    def _pre(self, x, mask):
        n = self.norm_1(x)
        x = x + self.dropout_1(self.self_attn(n, n, n, mask))
        return x + self.dropout_2(self.ffn(self.norm_2(x)))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return self._pre(x, mask) if self.norm_first else self._post(x, mask)


class Encoder(nn.Module):
    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False):
        super().__init__()
        self.layers = nn.ModuleList(
            EncoderBlock(d_model, n_heads, d_ff, dropout, norm_first) for _ in range(n_layers))
        self.norm = LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        for i in range(len(self.layers)):
            x = self.layers[i](x, mask)
        x = self.norm(x)
        return x
