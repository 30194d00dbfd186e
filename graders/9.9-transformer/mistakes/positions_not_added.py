"""Planted mistake: the positional encoding is never added (the model is blind to order)."""
# expect: positions-not-added


class Transformer(Transformer):
    def encode(self, src, src_mask=None):
        return self.encoder(self.src_embed(src), src_mask)

    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        return self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)
