"""Planted mistake: a pre-norm Decoder normalises the memory with its final norm before the blocks read it."""
# expect: fault-in-wiring


class Decoder(Decoder):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        memory = self.norm(memory)
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x)
