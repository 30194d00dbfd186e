"""Planted mistake: forward indexes the table (`pe[seq_len]`, one row) where it should slice it
(`pe[:seq_len]`), so every position gets the encoding of position seq_len."""
# expect: fault-in-forward


class PositionalEncoding(PositionalEncoding):
    def forward(self, x):
        seq_len = x.size(-2)
        if seq_len > self.pe.size(0):
            raise ValueError(f"sequence of length {seq_len} is longer than max_len={self.pe.size(0)}")
        return self.dropout(x + self.pe[seq_len])
