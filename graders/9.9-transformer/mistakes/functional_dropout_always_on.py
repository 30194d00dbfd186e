"""Planted mistake: an extra F.dropout on the embedded inputs, without training=self.training."""
# expect: dropout-in-eval


class Transformer(Transformer):
    def __init__(self, *args, dropout=0.1, **kwargs):
        super().__init__(*args, dropout=dropout, **kwargs)
        self.p = dropout

    def encode(self, src, src_mask=None):
        x = nn.functional.dropout(self.pos_encoding(self.src_embed(src)), self.p)
        return self.encoder(x, src_mask)
