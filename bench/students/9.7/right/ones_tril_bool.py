"""Builds the causal mask as torch.ones(...).tril().bool(), with the decoder stack in a while loop."""

import torch  # noqa: I001
from torch import nn

from kata.earlier.feed_forward import FeedForward  # kata 9.5
from kata.earlier.layer_norm import LayerNorm  # kata 9.2
from kata.earlier.multi_head_attention import MultiHeadAttention  # kata 9.4


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    return torch.ones((size, size), device=device).tril().bool()


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

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        steps = [
            (self.norm_1, lambda h: self.self_attn(h, h, h, tgt_mask)),
            (self.norm_2, lambda h: self.cross_attn(h, memory, memory, src_mask)),
            (self.norm_3, lambda h: self.ffn(h)),
        ]
        for norm, sublayer in steps:
            if self.norm_first:
                x = x + self.dropout(sublayer(norm(x)))
            else:
                x = norm(x + self.dropout(sublayer(x)))
        return x


class Decoder(nn.Module):
    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False):
        super().__init__()
        self.layers = nn.ModuleList([DecoderBlock(d_model, n_heads, d_ff, dropout, norm_first)
                                     for _ in range(n_layers)])
        self.norm = LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        i = 0
        while i < len(self.layers):
            x = self.layers[i](x, memory, src_mask, tgt_mask)
            i += 1
        return self.norm(x)
