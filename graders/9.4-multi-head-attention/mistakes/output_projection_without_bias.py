"""Planted mistake: w_o built with bias=False (4 d_model^2 + 3 d_model parameters)."""
# expect: bias-missing


class MultiHeadAttention(MultiHeadAttention):
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__(d_model, n_heads, dropout)
        self.w_o = nn.Linear(d_model, d_model, bias=False)
