"""Planted mistake: check divisibility with assert (AssertionError) instead of raising ValueError."""
# expect: no-value-error


class MultiHeadAttention(MultiHeadAttention):
    def __init__(self, d_model, n_heads, dropout=0.0):
        assert d_model % n_heads == 0, "d_model must be divisible by n_heads"
        super().__init__(d_model, n_heads, dropout)
