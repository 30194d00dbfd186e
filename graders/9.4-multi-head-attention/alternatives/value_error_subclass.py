"""Alternative: indivisible heads raise an exception class of the file's own, a subclass of ValueError."""


class HeadsDoNotDivide(ValueError):
    """d_model cannot be split into n_heads heads of one whole size."""


class MultiHeadAttention(MultiHeadAttention):
    def __init__(self, d_model, n_heads, dropout=0.0):
        if d_model % n_heads:
            raise HeadsDoNotDivide(f"d_model ({d_model}) is not a multiple of n_heads ({n_heads})")
        super().__init__(d_model, n_heads, dropout)
