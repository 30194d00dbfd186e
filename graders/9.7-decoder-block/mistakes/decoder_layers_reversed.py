"""Planted mistake: the Decoder runs its blocks last to first."""
# expect: fault-in-wiring


class Decoder(Decoder):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        for layer in self.layers[::-1]:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x)
