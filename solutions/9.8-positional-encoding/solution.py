"""Kata 9.8: the sinusoidal positional encoding and scaled token embeddings.

Attention has no notion of order. Self-attention computes, for every query, a weighted average over
a SET of keys: permute the input positions and the outputs are permuted the same way, nothing else
changes. "dog bites man" and "man bites dog" would look alike. The paper therefore adds to each
token's embedding a vector that depends only on its position (Vaswani et al., 2017, section 3.5):

    PE[pos, 2i]     = sin(pos / 10000^(2i / d_model))
    PE[pos, 2i + 1] = cos(pos / 10000^(2i / d_model))          for i = 0, 1, ..., d_model/2 - 1

Pair i of dimensions, (2i, 2i + 1), is a point on the unit circle turning at the angular frequency
w_i = 1 / 10000^(2i / d_model): w_0 = 1 radian per position (wavelength 2 pi), down to about
1 / 10000 (wavelength 10000 * 2 pi) for the last pair. Fast pairs tell neighbours apart, slow pairs
tell near from far: together the pairs give every position a distinct code, a bit like the digits of
a clock, but smooth.

Why sines and cosines? Because moving k positions is the same linear map at every position: by the
angle-addition formulas

    sin(w (pos + k)) =  cos(w k) sin(w pos) + sin(w k) cos(w pos)
    cos(w (pos + k)) = -sin(w k) sin(w pos) + cos(w k) cos(w pos)

so each pair is ROTATED by the angle w_i k, whatever pos is:

    PE[pos + k] = M_k PE[pos],    M_k = blockdiag( [[cos w_i k, sin w_i k], [-sin w_i k, cos w_i k]] )

The paper's hope was that this lets the model attend by relative position easily (a fixed linear map
of the query or key finds "k tokens back"), and that a formula, unlike a learned table, works for
sequences longer than those seen in training. The table is fixed, not learned: it is a buffer.

The embedding side: a token id becomes a learned vector (a row of an nn.Embedding table), multiplied
by sqrt(d_model) (section 3.4). Embedding matrices are usually initialised small (Xavier gives entries
of size about 1 / sqrt(d_model), so a vector of norm about 1, and the Transformer of kata 9.9 shares
this matrix with the output projection); the positional encoding has entries of size about 1 (a vector
of norm sqrt(d_model / 2)). Scaling the embedding by sqrt(d_model) brings its entries to size about 1
too, so the token's identity is not drowned by its position when the two are added.

Public names (the kata's contract):
    sinusoidal_positional_encoding(max_len, d_model) -> (max_len, d_model) table in torch's default
        dtype (float32); ValueError when d_model is odd.
    PositionalEncoding(d_model, max_len=5000, dropout=0.1): buffer `pe` (max_len, d_model), the table
        above; forward(x) with x (batch, seq, d_model) returns Dropout(x + pe[:seq]), same shape,
        dtype and device; ValueError when seq > max_len. `x` is not modified.
    TokenEmbedding(vocab_size, d_model): nn.Embedding(vocab_size, d_model) `embedding`; forward(tokens)
        with tokens (batch, seq) of integer ids returns embedding(tokens) * sqrt(d_model),
        (batch, seq, d_model).
"""

import math

import torch
from torch import nn


def sinusoidal_positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    """The table of the paper's sinusoidal positional encodings.

        PE[pos, 2i]     = sin(pos / 10000^(2i / d_model))
        PE[pos, 2i + 1] = cos(pos / 10000^(2i / d_model))

    Args:
        max_len: number of positions, rows 0 .. max_len - 1.
        d_model: size of each encoding; must be even (dimensions come in sin/cos pairs).

    Returns:
        (max_len, d_model) tensor in torch's default dtype (float32), on the default device.

    Raises:
        ValueError: when d_model is odd.
    """
    ### BEGIN SOLUTION
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even (sin/cos pairs), got {d_model}")
    # Computed in float64, then rounded once: angles reach max_len radians, where float32 arithmetic
    # would lose digits before the sine is even taken.
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model/2,): 0, 2, 4, ...
    frequency = 10000.0 ** (-two_i / d_model)  # (d_model/2,): w_i = 1 / 10000^(2i / d_model)
    angle = position * frequency  # (max_len, d_model/2): pos * w_i
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)  # (max_len, d_model)
    pe[:, 0::2] = torch.sin(angle)  # even dimensions 2i
    pe[:, 1::2] = torch.cos(angle)  # odd dimensions 2i + 1
    return pe.to(torch.get_default_dtype())
    ### END SOLUTION


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal encoding of each position to the input, then applies dropout.

        forward(x) = Dropout(x + PE[:seq])

    Args:
        d_model: size of the vectors (even).
        max_len: the longest sequence this module accepts (5000 by default).
        dropout: dropout probability on the sum (the paper uses 0.1), active in training only.

    Buffers:
        pe: (max_len, d_model), sinusoidal_positional_encoding(max_len, d_model). A buffer, not a
            parameter: it is not trained, it follows .to(device / dtype), and it is in the state_dict.

    Raises:
        ValueError: from forward, for a sequence longer than max_len (and from the constructor for an
            odd d_model).
    """

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1):
        super().__init__()
        ### BEGIN SOLUTION
        self.d_model = d_model
        self.max_len = max_len
        self.dropout = nn.Dropout(dropout)
        # register_buffer: part of the module's state (moved by .to(), saved by state_dict) but not a
        # parameter, so no optimiser ever changes it.
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))  # (max_len, d_model)
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (batch, seq, d_model) -> Dropout(x + pe[:seq]), (batch, seq, d_model).

        Raises:
            ValueError: when seq > max_len.
        """
        ### BEGIN SOLUTION
        seq_len = x.size(-2)
        if seq_len > self.pe.size(0):
            raise ValueError(f"sequence of length {seq_len} is longer than max_len={self.pe.size(0)}")
        # pe[:seq_len] is (seq, d_model): it broadcasts over the batch. A new tensor, x is left untouched.
        return self.dropout(x + self.pe[:seq_len])  # (batch, seq, d_model)
        ### END SOLUTION


class TokenEmbedding(nn.Module):
    """Token ids -> learned vectors, scaled by sqrt(d_model).

        forward(tokens) = embedding(tokens) * sqrt(d_model)

    Args:
        vocab_size: number of token ids (ids are 0 .. vocab_size - 1).
        d_model:    size of each vector.

    Sub-modules:
        embedding: nn.Embedding(vocab_size, d_model); its weight (vocab_size, d_model) is the only
            parameter. Kata 9.9 may share this weight with another embedding and the output projection.
    """

    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        ### BEGIN SOLUTION
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model)  # weight: (vocab_size, d_model)
        ### END SOLUTION

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (batch, seq) integer ids -> (batch, seq, d_model) vectors, times sqrt(d_model)."""
        ### BEGIN SOLUTION
        return self.embedding(tokens) * math.sqrt(self.d_model)  # (batch, seq, d_model)
        ### END SOLUTION
