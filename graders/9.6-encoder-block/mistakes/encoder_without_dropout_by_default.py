"""Planted mistake: the encoder's dropout defaults to 0 (the contract's default is dropout=0.1)."""
# expect: wrong-default


class Encoder(Encoder):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__(n_layers, d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first)
