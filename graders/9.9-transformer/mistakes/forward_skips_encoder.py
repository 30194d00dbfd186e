"""Planted mistake: forward hands the decoder the position-encoded source embeddings, not the encoder's memory."""
# expect: fault-in-wiring


class Transformer(Transformer):
    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        memory = self.pos_encoding(self.src_embed(src))  # (batch, src_len, d_model)
        return self.generator(self.decode(tgt, memory, src_mask, tgt_mask))
