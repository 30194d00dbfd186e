"""Planted mistake: the three norms built with eps=1e-6 (another codebase's default), not LayerNorm's 1e-5."""
# expect: fault-in-norm
# also: fault-in-decoder-block


class DecoderBlock(DecoderBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        self.norm_1, self.norm_2, self.norm_3 = (LayerNorm(d_model, eps=1e-6) for _ in range(3))
