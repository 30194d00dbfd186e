"""Compares a float lower triangle of ones with 1 for the causal mask, and splits the block into PyTorch-style _sa/_mha/_ff methods."""

import torch  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)
from torch import nn

# Your own pieces from katas 9.2, 9.4 and 9.5 when you run this file; the reference solutions of those
# katas when it is graded, so that a mistake made there costs points there only.
from kata.earlier.feed_forward import FeedForward  # kata 9.5
from kata.earlier.layer_norm import LayerNorm  # kata 9.2
from kata.earlier.multi_head_attention import MultiHeadAttention  # kata 9.4


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    lower = torch.tril(torch.ones(size, size, device=device))
    return lower == 1


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
        self.dropout_1 = nn.Dropout(dropout)
        self.dropout_2 = nn.Dropout(dropout)
        self.dropout_3 = nn.Dropout(dropout)

    def _sa_block(self, x, tgt_mask):
        return self.dropout_1(self.self_attn(x, x, x, tgt_mask))

    def _mha_block(self, x, memory, src_mask):
        return self.dropout_2(self.cross_attn(x, memory, memory, src_mask))

    def _ff_block(self, x):
        return self.dropout_3(self.ffn(x))

    def forward(self, x: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None = None,
                tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        if self.norm_first:
            x = x + self._sa_block(self.norm_1(x), tgt_mask)
            x = x + self._mha_block(self.norm_2(x), memory, src_mask)
            x = x + self._ff_block(self.norm_3(x))
        else:
            x = self.norm_1(x + self._sa_block(x, tgt_mask))
            x = self.norm_2(x + self._mha_block(x, memory, src_mask))
            x = self.norm_3(x + self._ff_block(x))
        return x


class Decoder(nn.Module):
    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False):
        super().__init__()
        blocks = [DecoderBlock(d_model, n_heads, d_ff, dropout, norm_first) for _ in range(n_layers)]
        self.layers = nn.ModuleList(blocks)
        self.norm = LayerNorm(d_model) if norm_first else nn.Identity()
        print(f"Decoder: {n_layers} blocks, {'pre' if norm_first else 'post'}-norm")

    def forward(self, x: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None = None,
                tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        out = x
        for layer in self.layers:
            out = layer(out, memory, src_mask, tgt_mask)
        return self.norm(out)
