"""Planted mistake: the inner nn.Embedding is called directly, skipping the sqrt(d_model) scale."""
# expect: embeddings-not-scaled


class Transformer(Transformer):
    def encode(self, src, src_mask=None):
        return self.encoder(self.pos_encoding(self.src_embed.embedding(src)), src_mask)

    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        return self.decoder(self.pos_encoding(self.tgt_embed.embedding(tgt)), memory, src_mask, tgt_mask)
