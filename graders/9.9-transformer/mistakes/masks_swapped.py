"""Planted mistake: decode hands the decoder its masks in the wrong order."""
# expect: masks-swapped


class Transformer(Transformer):
    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        return self.decoder(self.pos_encoding(self.tgt_embed(tgt)), memory, tgt_mask, src_mask)
