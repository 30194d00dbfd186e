"""Planted mistake: the dropout built as nn.Dropout(0.1), the paper's rate, whatever rate the module is given."""
# expect: dropout-rate-ignored


class PositionalEncoding(PositionalEncoding):
    def __init__(self, d_model, max_len=5000, dropout=0.1):
        super().__init__(d_model, max_len, dropout)
        self.dropout = nn.Dropout(0.1)
