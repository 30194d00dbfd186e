"""Writes the ReLU as h * (h > 0) and keeps the steps in named local variables, with an extra_repr."""

from torch import nn


class FeedForward(nn.Module):
    """Position-wise feed-forward network: linear_2(dropout(relu(linear_1(x)))).

    Args:
        d_model: size of the input and output features (512 in the paper).
        d_ff:    size of the hidden layer (2048 in the paper).
        dropout: probability of zeroing a hidden activation in training mode.
    """

    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.d_model = d_model
        self.d_ff = d_ff
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.hidden_dropout = nn.Dropout(p=dropout)

    def extra_repr(self):
        return f"d_model={self.d_model}, d_ff={self.d_ff}"

    def forward(self, x):
        """(..., d_model) -> (..., d_model)."""
        pre_activation = self.linear_1(x)
        gate = pre_activation > 0  # bool, promoted to x's dtype by the product
        hidden = pre_activation * gate  # max(0, .)
        hidden = self.hidden_dropout(hidden)
        return self.linear_2(hidden)
