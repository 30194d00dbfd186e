"""Alternative: the stack as functools.reduce over the layers; the final norm only when norm_first."""
import functools


class Encoder(Encoder):
    def forward(self, x, mask=None):
        x = functools.reduce(lambda h, layer: layer(h, mask), self.layers, x)
        return self.norm(x)
