"""Planted mistake: the block is pre-norm unless told otherwise (the paper's, and the contract's, default is
post-norm: norm_first=False)."""
# expect: wrong-default


class EncoderBlock(EncoderBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=True):
        super().__init__(d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first)
