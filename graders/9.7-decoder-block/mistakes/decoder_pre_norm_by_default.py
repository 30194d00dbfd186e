"""Planted mistake: the decoder is pre-norm unless told otherwise (the paper's, and the contract's, default is
post-norm: norm_first=False, with no final norm)."""
# expect: wrong-default


class Decoder(Decoder):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm_first=True):
        super().__init__(n_layers, d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first)
