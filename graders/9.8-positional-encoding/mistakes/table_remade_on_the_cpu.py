"""Planted mistake: forward makes the table again for the sequence, sinusoidal_positional_encoding(seq, d_model), on
the default device (the CPU) and converts only its dtype: right on the CPU, a device mismatch on a GPU."""
# expect: tensor-on-default-device


class PositionalEncoding(PositionalEncoding):
    def forward(self, x):
        seq_len = x.size(-2)
        if seq_len > self.pe.size(0):
            raise ValueError(f"sequence of length {seq_len} is longer than max_len={self.pe.size(0)}")
        return self.dropout(x + sinusoidal_positional_encoding(seq_len, self.d_model).to(x.dtype))
