"""Planted mistake: the encoder calls its blocks without the mask."""
# expect: mask-ignored


class Encoder(Encoder):
    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)
