"""Kata 9.6: the encoder block and the N-layer encoder.

The encoder of the Transformer (Vaswani et al., 2017, section 3.1) is a stack of N = 6 identical
blocks. Each block has two sub-layers: multi-head self-attention, then the position-wise feed-forward
network. Each sub-layer is wrapped in a residual connection (He et al., 2016) followed by layer
normalisation (Ba et al., 2016):

    output = LayerNorm(x + Dropout(Sublayer(x)))                        (post-norm, the paper)

The residual connection `x + ...` gives every block an identity path: the block only has to learn a
correction to its input, and gradients reach the lowest layers undiminished through the sum. Dropout
(P_drop = 0.1 in the paper) is applied to each sub-layer's output before it is added.

Most models since the paper normalise the sub-layer's INPUT instead and leave the residual path
untouched (Xiong et al., 2020, "On Layer Normalization in the Transformer Architecture"):

    output = x + Dropout(Sublayer(LayerNorm(x)))                        (pre-norm)

Pre-norm trains stably without a learning-rate warm-up, but its residual stream is never normalised,
so a pre-norm stack ends with one final LayerNorm. A post-norm stack needs none: every block already
ends with a norm.

For one encoder block (the mask True where a query may attend to a key):

    post-norm:  x = norm_1(x + Dropout(SelfAttn(x, x, x, mask)))
                x = norm_2(x + Dropout(FFN(x)))
    pre-norm:   h = norm_1(x);  x = x + Dropout(SelfAttn(h, h, h, mask))
                x = x + Dropout(FFN(norm_2(x)))

The block maps (batch, seq, d_model) to (batch, seq, d_model): blocks stack without any reshaping.

Public names (the kata's contract):
    EncoderBlock(d_model, n_heads, d_ff, dropout=0.1, norm_first=False) with sub-modules `self_attn`
        (MultiHeadAttention), `ffn` (FeedForward), `norm_1`, `norm_2` (LayerNorm);
        forward(x, mask=None) -> (batch, seq, d_model).
    Encoder(n_layers, d_model, n_heads, d_ff, dropout=0.1, norm_first=False) with `layers` (an
        nn.ModuleList of n_layers separate EncoderBlocks) and `norm` (a LayerNorm when norm_first,
        else nn.Identity); forward(x, mask=None) -> (batch, seq, d_model).
"""

import torch  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)
from torch import nn

# Your own pieces from katas 9.2, 9.4 and 9.5 when you run this file; the reference solutions of those
# katas when it is graded, so that a mistake made there costs points there only.
from kata.earlier.feed_forward import FeedForward  # kata 9.5
from kata.earlier.layer_norm import LayerNorm  # kata 9.2
from kata.earlier.multi_head_attention import MultiHeadAttention  # kata 9.4


class EncoderBlock(nn.Module):
    """One encoder block: self-attention and a feed-forward network, each with a residual and a norm.

        post-norm (norm_first=False, the paper):
            x = norm_1(x + Dropout(self_attn(x, x, x, mask)))
            x = norm_2(x + Dropout(ffn(x)))
        pre-norm (norm_first=True):
            x = x + Dropout(self_attn(norm_1(x), norm_1(x), norm_1(x), mask))
            x = x + Dropout(ffn(norm_2(x)))

    Args:
        d_model:    width of the residual stream (512 in the paper).
        n_heads:    attention heads (8); d_model must be divisible by it (MultiHeadAttention raises
                    ValueError otherwise).
        d_ff:       inner width of the feed-forward network (2048).
        dropout:    dropout probability, applied to each sub-layer's output before the residual sum,
                    and passed on to the attention weights and the feed-forward network.
        norm_first: False for post-norm (the paper), True for pre-norm.

    Sub-modules (their names are part of the contract):
        self_attn: MultiHeadAttention(d_model, n_heads, dropout)
        ffn:       FeedForward(d_model, d_ff, dropout)
        norm_1:    LayerNorm(d_model), the norm of the attention sub-layer
        norm_2:    LayerNorm(d_model), the norm of the feed-forward sub-layer
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        ### BEGIN SOLUTION
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.norm_1 = LayerNorm(d_model)
        self.norm_2 = LayerNorm(d_model)
        # One Dropout module serves both sub-layers: it has no parameters, and each call draws a new mask.
        self.dropout = nn.Dropout(dropout)
        ### END SOLUTION

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Apply the block.

        Args:
            x:    (batch, seq, d_model).
            mask: None, or a bool tensor broadcastable to (batch, n_heads, seq, seq), True where a query
                  may attend to a key; a padding mask is (batch, 1, 1, seq).

        Returns:
            (batch, seq, d_model), x's dtype and device.
        """
        ### BEGIN SOLUTION
        if self.norm_first:
            h = self.norm_1(x)  # (batch, seq, d_model)
            x = x + self.dropout(self.self_attn(h, h, h, mask))  # (batch, seq, d_model)
            x = x + self.dropout(self.ffn(self.norm_2(x)))  # (batch, seq, d_model)
        else:
            x = self.norm_1(x + self.dropout(self.self_attn(x, x, x, mask)))  # (batch, seq, d_model)
            x = self.norm_2(x + self.dropout(self.ffn(x)))  # (batch, seq, d_model)
        return x
        ### END SOLUTION


class Encoder(nn.Module):
    """A stack of n_layers encoder blocks, each with its own weights, and a final norm for pre-norm.

        for block in layers: x = block(x, mask)
        return norm(x)      # norm is LayerNorm(d_model) when norm_first, nn.Identity() otherwise

    Args: n_layers (6 in the paper), then EncoderBlock's arguments, all passed to every block.

    Sub-modules (their names are part of the contract):
        layers: nn.ModuleList of n_layers separate EncoderBlock objects (no shared weights).
        norm:   LayerNorm(d_model) when norm_first (a pre-norm residual stream is never normalised
                otherwise), else nn.Identity() (each post-norm block already ends with a norm).
    """

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False):
        super().__init__()
        ### BEGIN SOLUTION
        # A new block per layer: [EncoderBlock(...)] * n_layers would repeat ONE block (one set of weights).
        self.layers = nn.ModuleList(
            [EncoderBlock(d_model, n_heads, d_ff, dropout, norm_first) for _ in range(n_layers)])
        self.norm = LayerNorm(d_model) if norm_first else nn.Identity()
        ### END SOLUTION

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Run x through every block in order, then the final norm.

        Args:
            x:    (batch, seq, d_model), the embedded source.
            mask: None, or a bool mask broadcastable to (batch, n_heads, seq, seq), True = may attend;
                  usually the source padding mask (batch, 1, 1, seq). Every block gets the same mask.

        Returns:
            (batch, seq, d_model): the "memory" the decoder attends to.
        """
        ### BEGIN SOLUTION
        for layer in self.layers:
            x = layer(x, mask)  # (batch, seq, d_model)
        return self.norm(x)
        ### END SOLUTION
