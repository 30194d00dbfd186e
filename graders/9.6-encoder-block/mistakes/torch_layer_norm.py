"""Planted mistake: the block's norms are torch's nn.LayerNorm, not the LayerNorm of kata 9.2."""
# expect: torch-layer-norm


class EncoderBlock(EncoderBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        self.norm_1 = nn.LayerNorm(d_model)
        self.norm_2 = nn.LayerNorm(d_model)
