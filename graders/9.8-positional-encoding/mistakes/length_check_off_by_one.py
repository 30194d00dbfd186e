"""Planted mistake: the length check is off by one (`>=`), so a sequence of exactly max_len positions, which fits
the table, raises."""
# expect: value-error-on-valid-input


class PositionalEncoding(PositionalEncoding):
    def forward(self, x):
        seq_len = x.size(-2)
        if seq_len >= self.pe.size(0):
            raise ValueError(f"sequence of length {seq_len} is longer than max_len={self.pe.size(0)}")
        return self.dropout(x + self.pe[:seq_len])
