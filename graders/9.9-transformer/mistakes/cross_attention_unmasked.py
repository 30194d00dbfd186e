"""Planted mistake: the source padding mask is not passed to the decoder's cross-attention."""
# expect: src-mask-not-in-cross-attention


class Transformer(Transformer):
    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        x = self.pos_encoding(self.tgt_embed(tgt))
        return self.decoder(x, memory, None, tgt_mask)
