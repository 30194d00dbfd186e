"""Planted mistake: the divisibility check is the wrong way round, so every d_model that n_heads divides raises."""
# expect: value-error-on-valid-input
# also: no-value-error


class MultiHeadAttention(MultiHeadAttention):
    def __init__(self, d_model, n_heads, dropout=0.0):
        nn.Module.__init__(self)
        if d_model % n_heads == 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))
        self.dropout = nn.Dropout(dropout)
        self.attn_weights = None
