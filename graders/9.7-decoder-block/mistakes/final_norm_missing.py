"""Planted mistake: no final norm, even for a pre-norm decoder."""
# expect: missing-final-norm


class Decoder(Decoder):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.norm = nn.Identity()
