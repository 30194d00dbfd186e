"""Planted mistake: decode looks the target up in the source embedding."""
# expect: tgt-embedded-with-src-embed


class Transformer(Transformer):
    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        x = self.pos_encoding(self.src_embed(tgt))
        return self.decoder(x, memory, src_mask, tgt_mask)
