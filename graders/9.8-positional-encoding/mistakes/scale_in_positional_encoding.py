"""Planted mistake: the sqrt(d_model) scale is applied in PositionalEncoding instead of the embedding."""
# expect: scale-in-positional-encoding


class PositionalEncoding(PositionalEncoding):
    def forward(self, x):
        seq_len = x.size(1)
        if seq_len > self.pe.size(0):
            raise ValueError("sequence longer than max_len")
        return self.dropout(x * math.sqrt(self.d_model) + self.pe[:seq_len])
