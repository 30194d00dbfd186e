"""Planted mistake: the decoder block's dropout defaults to 0 (the contract's default is dropout=0.1)."""
# expect: wrong-default


class DecoderBlock(DecoderBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first)
