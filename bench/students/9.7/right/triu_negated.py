"""Builds the causal mask as the negation of the strict upper triangle, and names each step of the block."""

import torch  # noqa: I001
from torch import nn

from kata.earlier.feed_forward import FeedForward  # kata 9.5
from kata.earlier.layer_norm import LayerNorm  # kata 9.2
from kata.earlier.multi_head_attention import MultiHeadAttention  # kata 9.4


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    future = torch.ones(size, size, device=device).triu(diagonal=1).bool()
    return ~future


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
        self.drop_1 = nn.Dropout(dropout)
        self.drop_2 = nn.Dropout(dropout)
        self.drop_3 = nn.Dropout(dropout)

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        if not self.norm_first:
            self_out = self.self_attn(x, x, x, mask=tgt_mask)
            x = self.norm_1(x + self.drop_1(self_out))
            cross_out = self.cross_attn(x, memory, memory, mask=src_mask)
            x = self.norm_2(x + self.drop_2(cross_out))
            ff_out = self.ffn(x)
            return self.norm_3(x + self.drop_3(ff_out))
        q = self.norm_1(x)
        x = x + self.drop_1(self.self_attn(q, q, q, mask=tgt_mask))
        q = self.norm_2(x)
        x = x + self.drop_2(self.cross_attn(q, memory, memory, mask=src_mask))
        return x + self.drop_3(self.ffn(self.norm_3(x)))


class Decoder(nn.Module):
    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False):
        super().__init__()
        self.layers = nn.ModuleList()
        for _ in range(n_layers):
            self.layers.append(DecoderBlock(d_model, n_heads, d_ff, dropout, norm_first))
        self.norm = LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        out = x
        for layer in self.layers:
            out = layer(out, memory, src_mask, tgt_mask)
        return self.norm(out)
