"""Runs the stack with functools.reduce and prints each block's output norm when asked to."""

import functools  # noqa: I001

import torch
from torch import nn

from kata.earlier.feed_forward import FeedForward  # kata 9.5
from kata.earlier.layer_norm import LayerNorm  # kata 9.2
from kata.earlier.multi_head_attention import MultiHeadAttention  # kata 9.4

VERBOSE = True


class EncoderBlock(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.norm_1 = LayerNorm(d_model)
        self.norm_2 = LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if not self.norm_first:
            attn_out = self.dropout(self.self_attn(x, x, x, mask=mask))
            x = self.norm_1(attn_out + x)
            ffn_out = self.dropout(self.ffn(x))
            out = self.norm_2(ffn_out + x)
        else:
            normed = self.norm_1(x)
            x = self.dropout(self.self_attn(normed, normed, normed, mask=mask)) + x
            out = self.dropout(self.ffn(self.norm_2(x))) + x
        if VERBOSE:
            print(f"block out: mean {out.mean().item():.3f} std {out.std().item():.3f}")
        return out


class Encoder(nn.Module):
    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False):
        super().__init__()
        self.layers = nn.ModuleList([EncoderBlock(d_model, n_heads, d_ff, dropout, norm_first)
                                     for _ in range(n_layers)])
        if norm_first:
            self.norm = LayerNorm(d_model)
        else:
            self.norm = nn.Identity()

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.norm(functools.reduce(lambda h, block: block(h, mask), self.layers, x))
