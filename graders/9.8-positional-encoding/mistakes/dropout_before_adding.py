"""Planted mistake: dropout on the embeddings, then the encoding added: dropout(x) + pe."""
# expect: dropout-before-adding-positions


class PositionalEncoding(PositionalEncoding):
    def forward(self, x):
        if x.size(1) > self.pe.size(0):
            raise ValueError("sequence longer than max_len")
        return self.dropout(x) + self.pe[: x.size(1)]
