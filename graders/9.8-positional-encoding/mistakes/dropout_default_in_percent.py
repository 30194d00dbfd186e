"""Planted mistake: the dropout default written in percent (10 for 10%): nn.Dropout refuses it, so the module
cannot be built without a dropout argument (the contract's default is dropout=0.1)."""
# expect: wrong-default


class PositionalEncoding(PositionalEncoding):
    def __init__(self, d_model, max_len=5000, dropout=10):
        super().__init__(d_model, max_len=max_len, dropout=dropout)
