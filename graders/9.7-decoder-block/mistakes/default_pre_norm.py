"""Planted mistake: DecoderBlock defaults to pre-norm (norm_first=True), as many recent codebases do."""
# expect: default-pre-norm


class DecoderBlock(DecoderBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=True):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
