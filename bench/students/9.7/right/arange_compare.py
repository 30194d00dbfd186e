"""Builds the causal mask by comparing aranges (j <= i) and uses a residual helper for the three sub-layers."""

import torch  # noqa: I001
from torch import nn

from kata.earlier.feed_forward import FeedForward  # kata 9.5
from kata.earlier.layer_norm import LayerNorm  # kata 9.2
from kata.earlier.multi_head_attention import MultiHeadAttention  # kata 9.4


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    idx = torch.arange(size, device=device)
    return idx[None, :] <= idx[:, None]  # [i, j] = j <= i


class DecoderBlock(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.norm_1 = LayerNorm(d_model)
        self.norm_2 = LayerNorm(d_model)
        self.norm_3 = LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def _residual(self, x, norm, fn):
        if self.norm_first:
            return x + self.dropout(fn(norm(x)))
        return norm(x + self.dropout(fn(x)))

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        x = self._residual(x, self.norm_1, lambda h: self.self_attn(h, h, h, tgt_mask))
        x = self._residual(x, self.norm_2, lambda h: self.cross_attn(h, memory, memory, src_mask))
        return self._residual(x, self.norm_3, self.ffn)


class Decoder(nn.Module):
    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False):
        super().__init__()
        self.layers = nn.ModuleList([DecoderBlock(d_model, n_heads, d_ff, dropout, norm_first)
                                     for _ in range(n_layers)])
        self.norm = LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        for block in self.layers:
            x = block(x, memory, src_mask=src_mask, tgt_mask=tgt_mask)
        return self.norm(x)
