"""Planted mistake: the Encoder runs its blocks last to first."""
# expect: fault-in-wiring

class Encoder(Encoder):
    def forward(self, x, mask=None):
        for layer in reversed(self.layers):
            x = layer(x, mask)
        return self.norm(x)
