"""Planted mistake: the table is built but forward forgets to add it."""
# expect: positions-not-added


class PositionalEncoding(PositionalEncoding):
    def forward(self, x):
        if x.size(1) > self.pe.size(0):
            raise ValueError("sequence longer than max_len")
        return self.dropout(x)
