"""Planted mistake: decode never passes tgt_mask on, so the decoder sees the future."""
# expect: tgt-mask-ignored


class Transformer(Transformer):
    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        return self.decoder(self.pos_encoding(self.tgt_embed(tgt)), memory, src_mask, None)
