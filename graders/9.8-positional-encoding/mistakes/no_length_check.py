"""Planted mistake: no check of the sequence length against max_len (broadcasting fails instead)."""
# expect: no-length-check


class PositionalEncoding(PositionalEncoding):
    def forward(self, x):
        return self.dropout(x + self.pe[: x.size(1)])
