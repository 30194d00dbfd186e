"""Planted mistake: the table is an nn.Parameter (frozen), not a buffer."""
# expect: pe-is-parameter


class PositionalEncoding(PositionalEncoding):
    def __init__(self, d_model, max_len=5000, dropout=0.1):
        nn.Module.__init__(self)
        self.d_model = d_model
        self.dropout = nn.Dropout(dropout)
        self.pe = nn.Parameter(sinusoidal_positional_encoding(max_len, d_model), requires_grad=False)
