"""Planted mistake: forward returns x + pe and never applies the dropout it built."""
# expect: dropout-missing


class PositionalEncoding(PositionalEncoding):
    def forward(self, x):
        if x.size(1) > self.pe.size(0):
            raise ValueError("sequence longer than max_len")
        return x + self.pe[: x.size(1)]
