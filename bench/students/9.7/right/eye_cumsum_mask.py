"""Builds the causal mask as a running sum down the rows of an identity matrix, and loops over the three sub-layers."""

import torch  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)
from torch import nn

# Your own pieces from katas 9.2, 9.4 and 9.5 when you run this file; the reference solutions of those
# katas when it is graded, so that a mistake made there costs points there only.
from kata.earlier.feed_forward import FeedForward  # kata 9.5
from kata.earlier.layer_norm import LayerNorm  # kata 9.2
from kata.earlier.multi_head_attention import MultiHeadAttention  # kata 9.4


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    # cumsum of the identity down the rows: entry (i, j) counts the ones at rows <= i of column j,
    # which is 1 exactly when j <= i
    running = torch.eye(size, device=device).cumsum(dim=0)
    return running > 0


class DecoderBlock(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.norm_1 = LayerNorm(d_model)
        self.norm_2 = LayerNorm(d_model)
        self.norm_3 = LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None = None,
                tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        sublayers = [
            (self.norm_1, lambda h: self.self_attn(h, h, h, tgt_mask)),
            (self.norm_2, lambda h: self.cross_attn(h, memory, memory, src_mask)),
            (self.norm_3, self.ffn),
        ]
        for norm, f in sublayers:
            if self.norm_first:
                x = x + self.dropout(f(norm(x)))
            else:
                x = norm(x + self.dropout(f(x)))
        return x


class Decoder(nn.Module):
    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False):
        super().__init__()
        self.layers = nn.ModuleList([DecoderBlock(d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first)
                                     for _ in range(n_layers)])
        self.norm = LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None = None,
                tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        for block in self.layers:
            x = block(x, memory, src_mask=src_mask, tgt_mask=tgt_mask)
        return self.norm(x)
