"""Planted mistake: the encoding is added to the caller's tensor in place."""
# expect: modifies-input


class PositionalEncoding(PositionalEncoding):
    def forward(self, x):
        if x.size(1) > self.pe.size(0):
            raise ValueError("sequence longer than max_len")
        x += self.pe[: x.size(1)]
        return self.dropout(x)
