"""Alternative: forward written out in one expression instead of calling encode and decode."""


class Transformer(Transformer):
    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        memory = self.encoder(self.pos_encoding(self.src_embed(src)), mask=src_mask)
        h = self.decoder(self.pos_encoding(self.tgt_embed(tgt)), memory, src_mask=src_mask, tgt_mask=tgt_mask)
        return self.generator(h)
