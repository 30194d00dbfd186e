"""Alternative: encode and decode call the stacks with keyword arguments; the target mask built with &= ."""


def target_mask(tgt, pad_id=None):
    mask = causal_mask(tgt.size(-1), tgt.device)
    if pad_id is not None:
        mask = mask & (tgt != pad_id).view(tgt.size(0), 1, 1, tgt.size(1))
    return mask


class Transformer(Transformer):
    def encode(self, src, src_mask=None):
        return self.encoder(x=self.pos_encoding(self.src_embed(src)), mask=src_mask)

    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        return self.decoder(self.pos_encoding(self.tgt_embed(tgt)), memory=memory, src_mask=src_mask,
                            tgt_mask=tgt_mask)
