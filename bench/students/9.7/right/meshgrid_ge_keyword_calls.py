"""Builds the causal mask from a meshgrid of row and column indices (row >= col); calls the attentions by keyword."""

import torch  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)
from torch import nn

# Your own pieces from katas 9.2, 9.4 and 9.5 when you run this file; the reference solutions of those
# katas when it is graded, so that a mistake made there costs points there only.
from kata.earlier.feed_forward import FeedForward  # kata 9.5
from kata.earlier.layer_norm import LayerNorm  # kata 9.2
from kata.earlier.multi_head_attention import MultiHeadAttention  # kata 9.4


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    idx = torch.arange(size, device=device)
    rows, cols = torch.meshgrid(idx, idx, indexing="ij")
    return rows >= cols  # query i may see key j when j <= i


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

    def forward(self, x: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None = None,
                tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        pre = self.norm_first
        # 1. masked self-attention
        q = self.norm_1(x) if pre else x
        sa = self.self_attn(query=q, key=q, value=q, mask=tgt_mask)
        x = x + self.dropout(sa) if pre else self.norm_1(x + self.dropout(sa))
        # 2. cross-attention: queries from the target, keys and values from the encoder's memory
        q = self.norm_2(x) if pre else x
        ca = self.cross_attn(query=q, key=memory, value=memory, mask=src_mask)
        x = x + self.dropout(ca) if pre else self.norm_2(x + self.dropout(ca))
        # 3. feed-forward
        f = self.ffn(self.norm_3(x) if pre else x)
        return x + self.dropout(f) if pre else self.norm_3(x + self.dropout(f))


class Decoder(nn.Module):
    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False):
        super().__init__()
        self.layers = nn.ModuleList([DecoderBlock(d_model, n_heads, d_ff, dropout, norm_first)
                                     for _ in range(n_layers)])
        self.norm = LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None = None,
                tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x)

