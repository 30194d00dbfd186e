"""Planted mistake: d_k computed with true division, a float, which view refuses as a size."""
# expect: d-k-float


class MultiHeadAttention(MultiHeadAttention):
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__(d_model, n_heads, dropout)
        self.d_k = d_model / n_heads
