"""Builds the causal mask from a flat arange (row = k // size, col = k % size), and picks norm_1..norm_3 with getattr in a loop over the sub-layers."""

import torch  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)
from torch import nn

# Your own pieces from katas 9.2, 9.4 and 9.5 when you run this file; the reference solutions of those
# katas when it is graded, so that a mistake made there costs points there only.
from kata.earlier.feed_forward import FeedForward  # kata 9.5
from kata.earlier.layer_norm import LayerNorm  # kata 9.2
from kata.earlier.multi_head_attention import MultiHeadAttention  # kata 9.4


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    k = torch.arange(size * size, device=device)
    row = k // size
    col = k % size
    return (col <= row).view(size, size)


class DecoderBlock(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        for i in (1, 2, 3):
            setattr(self, f"norm_{i}", LayerNorm(d_model))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None = None,
                tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        steps = [
            lambda h: self.self_attn(h, h, h, tgt_mask),
            lambda h: self.cross_attn(h, memory, memory, src_mask),
            lambda h: self.ffn(h),
        ]
        for i, step in enumerate(steps, start=1):
            norm = getattr(self, f"norm_{i}")
            if self.norm_first:
                x = x + self.drop(step(norm(x)))
            else:
                x = norm(x + self.drop(step(x)))
        return x


class Decoder(nn.Module):
    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False):
        super().__init__()
        self.layers = nn.ModuleList(
            [DecoderBlock(d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first) for _ in range(n_layers)]
        )
        self.norm = LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None = None,
                tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        h = x
        for layer in self.layers:
            h = layer(h, memory, src_mask, tgt_mask)
        return self.norm(h)
