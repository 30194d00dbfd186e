"""Planted mistake: the encoder always ends with a final LayerNorm, post-norm too."""
# expect: extra-final-norm


class Encoder(Encoder):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.norm = LayerNorm(d_model)
