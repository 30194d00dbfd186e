"""Writes the residual wiring as two module-level functions (add_norm and norm_add) and keeps a debug print flag."""

import torch  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)
from torch import nn

# Your own pieces from katas 9.2, 9.4 and 9.5 when you run this file; the reference solutions of those
# katas when it is graded, so that a mistake made there costs points there only.
from kata.earlier.feed_forward import FeedForward  # kata 9.5
from kata.earlier.layer_norm import LayerNorm  # kata 9.2
from kata.earlier.multi_head_attention import MultiHeadAttention  # kata 9.4

DEBUG = False


def add_norm(x, sublayer_out, norm, drop):
    """post-norm: LayerNorm(x + Dropout(Sublayer(x)))"""
    return norm(torch.add(x, drop(sublayer_out)))


def norm_add(x, sublayer, norm, drop):
    """pre-norm: x + Dropout(Sublayer(LayerNorm(x)))"""
    return torch.add(x, drop(sublayer(norm(x))))


class EncoderBlock(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.norm_1 = LayerNorm(d_model)
        self.norm_2 = LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if self.norm_first:
            x = norm_add(x, lambda h: self.self_attn(h, h, h, mask), self.norm_1, self.drop)
            x = norm_add(x, self.ffn, self.norm_2, self.drop)
            return x
        attn_out = self.self_attn(x, x, x, mask)
        x = add_norm(x, attn_out, self.norm_1, self.drop)
        ffn_out = self.ffn(x)
        x = add_norm(x, ffn_out, self.norm_2, self.drop)
        return x


class Encoder(nn.Module):
    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False):
        super().__init__()
        self.layers = nn.ModuleList([EncoderBlock(d_model, n_heads, d_ff, dropout, norm_first)
                                     for _ in range(n_layers)])
        self.norm = LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        for n, block in enumerate(self.layers):
            x = block(x, mask)
            if DEBUG:
                print(f"block {n}: mean norm {x.norm(dim=-1).mean().item():.3f}")
        return self.norm(x)
