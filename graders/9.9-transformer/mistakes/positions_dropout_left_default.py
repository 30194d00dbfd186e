"""Planted mistake: PositionalEncoding built without the model's dropout, so the embeddings always drop at its
default 0.1, whatever dropout the Transformer is given."""
# expect: dropout-not-passed-on


class Transformer(Transformer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.pos_encoding = PositionalEncoding(self.pos_encoding.pe.size(1), self.pos_encoding.pe.size(0))
