"""Planted mistake: LayerNorm keeps eps but forward calls layer_norm without it (so always 1e-5)."""
# expect: module-eps-ignored


class LayerNorm(LayerNorm):
    def forward(self, x):
        return layer_norm(x, self.gamma, self.beta)
