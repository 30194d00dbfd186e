"""Planted mistake: the table is a plain attribute (self.pe = ...), not a registered buffer."""
# expect: pe-not-a-buffer


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.pe = sinusoidal_positional_encoding(max_len, d_model)

    def forward(self, x):
        if x.size(1) > self.pe.size(0):
            raise ValueError("sequence longer than max_len")
        return self.dropout(x + self.pe[: x.size(1)].to(x.device))
