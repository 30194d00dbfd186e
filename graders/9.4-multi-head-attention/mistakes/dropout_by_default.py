"""Planted mistake: dropout 0.1 unless told otherwise, as in the paper's model (the contract's default is
dropout=0.0: the module is deterministic in train mode unless asked for dropout)."""
# expect: wrong-default


class MultiHeadAttention(MultiHeadAttention):
    def __init__(self, d_model, n_heads, dropout=0.1):
        super().__init__(d_model, n_heads, dropout=dropout)
