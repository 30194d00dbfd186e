"""Planted mistake: encode and decode multiply by sqrt(d_model), which TokenEmbedding already does."""
# expect: embeddings-scaled-twice


class Transformer(Transformer):
    def encode(self, src, src_mask=None):
        x = self.pos_encoding(self.src_embed(src) * self.d_model**0.5)
        return self.encoder(x, src_mask)

    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        x = self.pos_encoding(self.tgt_embed(tgt) * self.d_model**0.5)
        return self.decoder(x, memory, src_mask, tgt_mask)
