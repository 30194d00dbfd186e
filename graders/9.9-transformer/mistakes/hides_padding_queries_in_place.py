"""Planted mistake: decode also hides the padding queries, with &= on the caller's tgt_mask."""
# expect: modifies-input
# also: fault-in-wiring


class Transformer(Transformer):
    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        if tgt_mask is not None and tgt_mask.dim() == 4:
            tgt_mask &= padding_mask(tgt, 0).transpose(-2, -1)  # in place: the caller's mask changes
        x = self.pos_encoding(self.tgt_embed(tgt))
        return self.decoder(x, memory, src_mask, tgt_mask)
