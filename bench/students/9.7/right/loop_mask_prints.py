"""Fills the causal mask with a Python loop over the rows and prints the mask's shape once built."""

import torch  # noqa: I001
from torch import nn

from kata.earlier.feed_forward import FeedForward  # kata 9.5
from kata.earlier.layer_norm import LayerNorm  # kata 9.2
from kata.earlier.multi_head_attention import MultiHeadAttention  # kata 9.4


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    mask = torch.zeros(size, size, dtype=torch.bool)
    for i in range(size):
        mask[i, : i + 1] = True  # row i sees columns 0..i
    print("causal mask", tuple(mask.shape))
    return mask.to(device) if device is not None else mask


class DecoderBlock(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.norm_1, self.norm_2, self.norm_3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        if self.norm_first:
            y = self.norm_1(x)
            x = self.dropout(self.self_attn(y, y, y, tgt_mask)) + x
            y = self.norm_2(x)
            x = self.dropout(self.cross_attn(y, memory, memory, src_mask)) + x
            y = self.norm_3(x)
            return self.dropout(self.ffn(y)) + x
        x = self.norm_1(self.dropout(self.self_attn(x, x, x, tgt_mask)) + x)
        x = self.norm_2(self.dropout(self.cross_attn(x, memory, memory, src_mask)) + x)
        return self.norm_3(self.dropout(self.ffn(x)) + x)


class Decoder(nn.Module):
    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False):
        super().__init__()
        self.layers = nn.ModuleList([DecoderBlock(d_model, n_heads, d_ff, dropout, norm_first)
                                     for _ in range(n_layers)])
        self.norm = LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x)
