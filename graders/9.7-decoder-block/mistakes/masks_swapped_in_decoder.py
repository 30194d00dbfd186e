"""Planted mistake: the decoder passes the masks to its blocks in the wrong order."""
# expect: masks-swapped


class Decoder(Decoder):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        for layer in self.layers:
            x = layer(x, memory, tgt_mask, src_mask)
        return self.norm(x)
