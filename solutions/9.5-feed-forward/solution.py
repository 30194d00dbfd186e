"""Kata 9.5: the position-wise feed-forward network.

Besides attention, every encoder and decoder block holds a small two-layer network applied to each
position separately and identically (Vaswani et al., 2017, section 3.3, eq. 2):

    FFN(x) = max(0, x W_1 + b_1) W_2 + b_2

with W_1 of shape (d_model, d_ff) and W_2 of shape (d_ff, d_model); the paper uses d_model = 512
and d_ff = 2048.

Why position-wise: attention is where positions exchange information; the feed-forward network
then transforms what each position has gathered, with the same weights at every position and no
interaction between them (the paper's other description of it: two convolutions with kernel size 1).
Permuting the positions of the input permutes the output the same way.

Why wider: the first layer lifts each vector into a space four times larger, the ReLU keeps only
the positive part of each of those d_ff features (a simple, learned, per-feature gate), and the
second layer projects back to d_model so the result can be added to the residual stream. In the base
model these layers hold 25.2M of the 44.1M parameters outside the embeddings.

Dropout: during training the hidden activations are zeroed with probability p and the survivors
scaled by 1 / (1 - p), so that their expected value is unchanged; in eval mode dropout does nothing.
Like the Annotated Transformer and torch's TransformerEncoderLayer, it sits after the ReLU.

Public names (the kata's contract):
    FeedForward(d_model, d_ff, dropout=0.0): nn.Module with nn.Linear layers `linear_1` (d_model -> d_ff)
        and `linear_2` (d_ff -> d_model); forward(x) maps (..., d_model) to (..., d_model), with x's
        dtype and device, and does not modify x.
"""

import torch
from torch import nn


class FeedForward(nn.Module):
    """Position-wise feed-forward network: linear_2(dropout(relu(linear_1(x)))).

    Args:
        d_model: size of the input and output features (512 in the paper).
        d_ff:    size of the hidden layer (2048 in the paper).
        dropout: probability of zeroing a hidden activation in training mode.

    Submodules:
        linear_1: nn.Linear(d_model, d_ff), W_1 and b_1.
        linear_2: nn.Linear(d_ff, d_model), W_2 and b_2.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        ### BEGIN SOLUTION
        self.linear_1 = nn.Linear(d_model, d_ff)  # weight (d_ff, d_model), bias (d_ff,)
        self.linear_2 = nn.Linear(d_ff, d_model)  # weight (d_model, d_ff), bias (d_model,)
        self.dropout = nn.Dropout(dropout)  # active in train(), a no-op in eval()
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_model) -> (..., d_model); each position is transformed on its own.

        nn.Linear acts on the last dimension, so (batch, seq, d_model) needs no reshaping.
        """
        ### BEGIN SOLUTION
        hidden = torch.relu(self.linear_1(x))  # (batch, seq, d_ff): max(0, x W_1 + b_1)
        hidden = self.dropout(hidden)  # (batch, seq, d_ff)
        return self.linear_2(hidden)  # (batch, seq, d_model): hidden W_2 + b_2
        ### END SOLUTION
