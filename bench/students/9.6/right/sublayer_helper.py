"""Wraps each sub-layer with a helper method that does the residual, dropout and norm for either order."""

import torch  # noqa: I001
from torch import nn

from kata.earlier.feed_forward import FeedForward  # kata 9.5
from kata.earlier.layer_norm import LayerNorm  # kata 9.2
from kata.earlier.multi_head_attention import MultiHeadAttention  # kata 9.4


class EncoderBlock(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.norm_1 = LayerNorm(d_model)
        self.norm_2 = LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)

    def _sublayer(self, x, norm, fn):
        if self.norm_first:
            return x + self.drop(fn(norm(x)))
        return norm(x + self.drop(fn(x)))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        x = self._sublayer(x, self.norm_1, lambda t: self.self_attn(t, t, t, mask))
        return self._sublayer(x, self.norm_2, self.ffn)


class Encoder(nn.Module):
    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False):
        super().__init__()
        blocks = []
        for _ in range(n_layers):
            blocks.append(EncoderBlock(d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first))
        self.layers = nn.ModuleList(blocks)
        self.norm = LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        for block in self.layers:
            x = block(x, mask=mask)
        return self.norm(x)
