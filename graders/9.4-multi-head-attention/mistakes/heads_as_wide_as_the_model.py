"""Planted mistake: every head as wide as the model (d_k = d_model), which the split cannot fit."""
# expect: heads-split-does-not-fit
# also: fault-in-weights


class MultiHeadAttention(MultiHeadAttention):
    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__(d_model, n_heads, dropout)
        self.d_k = d_model
