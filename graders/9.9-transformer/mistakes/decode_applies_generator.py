"""Planted mistake: decode applies the generator, and forward returns decode's output: right logits from forward,
but decode gives scores where the decoder's states are due."""
# expect: decode-gives-logits


class Transformer(Transformer):
    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        return self.generator(super().decode(tgt, memory, src_mask, tgt_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), src_mask, tgt_mask)
