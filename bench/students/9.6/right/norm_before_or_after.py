"""One helper normalises before the sub-layer or after the sum depending on norm_first, and the encoder can print each layer's output."""

import torch  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)
from torch import nn

# Your own pieces from katas 9.2, 9.4 and 9.5 when you run this file; the reference solutions of those
# katas when it is graded, so that a mistake made there costs points there only.
from kata.earlier.feed_forward import FeedForward  # kata 9.5
from kata.earlier.layer_norm import LayerNorm  # kata 9.2
from kata.earlier.multi_head_attention import MultiHeadAttention  # kata 9.4


DEBUG = False


class EncoderBlock(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.norm_1 = LayerNorm(d_model)
        self.norm_2 = LayerNorm(d_model)
        self.residual_dropout = nn.Dropout(p=dropout)

    def _residual(self, x, norm, sublayer):
        # pre-norm: the sub-layer reads norm(x); post-norm: it reads x and the sum gets normalised
        inp = norm(x) if self.norm_first else x
        y = x + self.residual_dropout(sublayer(inp))
        if not self.norm_first:
            y = norm(y)
        return y

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        def attend(h):
            return self.self_attn(h, h, h, mask=mask)

        x = self._residual(x, self.norm_1, attend)
        x = self._residual(x, self.norm_2, self.ffn)
        return x


class Encoder(nn.Module):
    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False):
        super().__init__()
        self.layers = nn.ModuleList(
            EncoderBlock(d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first) for _ in range(n_layers)
        )
        self.norm = LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        for idx, layer in enumerate(self.layers):
            x = layer(x, mask)
            if DEBUG:
                print(f"encoder layer {idx}: {tuple(x.shape)} mean={x.mean().item():.4f}")
        return self.norm(x)
