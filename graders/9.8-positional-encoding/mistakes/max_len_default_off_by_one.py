"""Planted mistake: max_len defaults to 5001 (one position too many: the contract's default is max_len=5000)."""
# expect: wrong-default


class PositionalEncoding(PositionalEncoding):
    def __init__(self, d_model, max_len=5001, dropout=0.1):
        super().__init__(d_model, max_len=max_len, dropout=dropout)
