"""Alternative: the Encoder calls its final norm only in pre-norm (a post-norm stack's nn.Identity changes nothing)."""


class Encoder(Encoder):
    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        if self.norm_first:
            x = self.norm(x)
        return x

    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.norm_first = norm_first
