"""Planted mistake: both norms built with eps=1e-6 (another codebase's default), not LayerNorm's 1e-5."""
# expect: fault-in-norm
# also: fault-in-encoder-block

class EncoderBlock(EncoderBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        self.norm_1 = LayerNorm(d_model, eps=1e-6)
        self.norm_2 = LayerNorm(d_model, eps=1e-6)
