"""Planted mistake: the encoder runs without the source padding mask (the decoder's cross-attention keeps it).

The copy task still learns with it (its evaluation is padded as its training); the reversal task, whose
held-out batches carry more padding than training ever had, does not (tests/test_train_demo.py)."""
# expect: src-mask-not-in-encoder


class Transformer(Transformer):
    def encode(self, src, src_mask=None):
        return self.encoder(self.pos_encoding(self.src_embed(src)), None)
