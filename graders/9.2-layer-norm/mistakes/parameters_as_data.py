"""Planted mistake: the module hands layer_norm gamma.data and beta.data: right values, but no graph reaches the
parameters, so training never changes them."""
# expect: graph-cut


class LayerNorm(LayerNorm):
    def forward(self, x):
        return layer_norm(x, self.gamma.data, self.beta.data, self.eps)
