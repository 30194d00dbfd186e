"""Kata 9.7: the causal mask, the decoder block and the N-layer decoder.

The decoder (Vaswani et al., 2017, section 3.1) generates the output one token at a time: the token at
position t + 1 is predicted from the target tokens at positions <= t and from the encoder's output,
the "memory". In training the whole target sequence is fed at once (teacher forcing: the decoder
reads the TRUE previous tokens, shifted right), and every position is trained in parallel. That is
only honest if position t cannot see positions > t: otherwise the model learns to copy the next
token instead of predicting it, and fails at inference, where the future does not exist yet. The
causal mask enforces it inside self-attention:

    causal_mask(T)[i, j] = True  if j <= i   (query i may attend to key j: itself and the past)
                           False if j >  i   (the future is hidden)

that is, True on and below the diagonal. Attention sets the blocked scores to -inf before the
softmax, so their weights are exactly 0 and output position t does not depend on later inputs at
all: its gradient with respect to them is exactly zero.

A decoder block has three sub-layers, each with its residual connection and its layer norm:

    1. masked self-attention over the target:    queries, keys, values = x,       mask = tgt_mask
    2. cross-attention ("encoder-decoder"):      queries = x, keys, values = memory, mask = src_mask
    3. the position-wise feed-forward network.

Cross-attention is where the target reads the source: each target position asks (query) which
source positions (keys) are relevant and takes their content (values). Its mask hides the source's
padding; the causal mask does not belong there (the whole source is known from the start).

    post-norm (the paper):  x = norm_1(x + Dropout(SelfAttn(x, x, x, tgt_mask)))
                            x = norm_2(x + Dropout(CrossAttn(x, memory, memory, src_mask)))
                            x = norm_3(x + Dropout(FFN(x)))
    pre-norm:               h = norm_1(x);  x = x + Dropout(SelfAttn(h, h, h, tgt_mask))
                            h = norm_2(x);  x = x + Dropout(CrossAttn(h, memory, memory, src_mask))
                            x = x + Dropout(FFN(norm_3(x)))

Public names (the kata's contract):
    causal_mask(size, device=None) -> bool (size, size), True on and below the diagonal.
    DecoderBlock(d_model, n_heads, d_ff, dropout=0.1, norm_first=False) with `self_attn`,
        `cross_attn` (MultiHeadAttention), `ffn` (FeedForward), `norm_1`, `norm_2`, `norm_3`
        (LayerNorm); forward(x, memory, src_mask=None, tgt_mask=None) -> (batch, tgt_len, d_model).
    Decoder(n_layers, d_model, n_heads, d_ff, dropout=0.1, norm_first=False) with `layers` (an
        nn.ModuleList of n_layers separate DecoderBlocks) and `norm` (a LayerNorm when norm_first,
        else nn.Identity); forward(x, memory, src_mask=None, tgt_mask=None).
"""

import torch  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)
from torch import nn

# Your own pieces from katas 9.2, 9.4 and 9.5 when you run this file; the reference solutions of those
# katas when it is graded, so that a mistake made there costs points there only.
from kata.earlier.feed_forward import FeedForward  # kata 9.5
from kata.earlier.layer_norm import LayerNorm  # kata 9.2
from kata.earlier.multi_head_attention import MultiHeadAttention  # kata 9.4


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    """The mask that lets position i attend to positions j <= i only.

        mask[i, j] = (j <= i)

    Args:
        size:   the target length T.
        device: where to create the mask (the default device when None).

    Returns:
        A bool tensor (size, size), True on and below the diagonal (True = may attend). It broadcasts
        against the (batch, n_heads, T, T) attention scores, and combines with a target padding mask
        of shape (batch, 1, 1, T) by `&`.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


class DecoderBlock(nn.Module):
    """One decoder block: masked self-attention, cross-attention to the memory, and a feed-forward
    network, each with a residual connection and a layer norm.

        post-norm (norm_first=False, the paper):
            x = norm_1(x + Dropout(self_attn(x, x, x, tgt_mask)))
            x = norm_2(x + Dropout(cross_attn(x, memory, memory, src_mask)))
            x = norm_3(x + Dropout(ffn(x)))
        pre-norm (norm_first=True):
            x = x + Dropout(self_attn(norm_1(x), norm_1(x), norm_1(x), tgt_mask))
            x = x + Dropout(cross_attn(norm_2(x), memory, memory, src_mask))
            x = x + Dropout(ffn(norm_3(x)))

    The memory is used as it comes (the encoder's final output); it is not normalised here.

    Args:
        d_model, n_heads, d_ff, dropout, norm_first: as for the encoder block (kata 9.6).

    Sub-modules (their names are part of the contract):
        self_attn:  MultiHeadAttention(d_model, n_heads, dropout), masked self-attention
        cross_attn: MultiHeadAttention(d_model, n_heads, dropout), queries from x, keys/values from memory
        ffn:        FeedForward(d_model, d_ff, dropout)
        norm_1, norm_2, norm_3: LayerNorm(d_model), one per sub-layer, in that order
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError()

    def forward(self, x: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None = None,
                tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Apply the block.

        Args:
            x:        (batch, tgt_len, d_model), the target side.
            memory:   (batch, src_len, d_model), the encoder's output.
            src_mask: None, or bool broadcastable to (batch, n_heads, tgt_len, src_len), True = may
                      attend; usually the source padding mask (batch, 1, 1, src_len). Cross-attention only.
            tgt_mask: None (no mask: every target position sees every other), or bool broadcastable to
                      (batch, n_heads, tgt_len, tgt_len); usually causal_mask(tgt_len), possibly combined
                      with a target padding mask. Self-attention only.

        Returns:
            (batch, tgt_len, d_model), x's dtype and device.
        """
        # YOUR CODE HERE
        raise NotImplementedError()


class Decoder(nn.Module):
    """A stack of n_layers decoder blocks, each with its own weights, and a final norm for pre-norm.

        for block in layers: x = block(x, memory, src_mask, tgt_mask)
        return norm(x)      # norm is LayerNorm(d_model) when norm_first, nn.Identity() otherwise

    Every block attends to the same memory (the encoder's final output) with the same masks.

    Args: n_layers (6 in the paper), then DecoderBlock's arguments, all passed to every block.

    Sub-modules (their names are part of the contract):
        layers: nn.ModuleList of n_layers separate DecoderBlock objects (no shared weights).
        norm:   LayerNorm(d_model) when norm_first, else nn.Identity().
    """

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False):
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError()

    def forward(self, x: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None = None,
                tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Run x through every block in order (all attending to `memory`), then the final norm.

        Args:
            x:        (batch, tgt_len, d_model), the embedded target (shifted right).
            memory:   (batch, src_len, d_model), the encoder's output.
            src_mask, tgt_mask: as for DecoderBlock.forward.

        Returns:
            (batch, tgt_len, d_model), ready for the generator's projection to the vocabulary.
        """
        # YOUR CODE HERE
        raise NotImplementedError()
