"""Planted mistake: code written for (seq, batch, d_model) inputs slices pe by x.size(0), the batch."""
# expect: positions-along-batch


class PositionalEncoding(PositionalEncoding):
    def forward(self, x):
        if x.size(1) > self.pe.size(0):
            raise ValueError("sequence longer than max_len")
        return self.dropout(x + self.pe[: x.size(0)].unsqueeze(1))
