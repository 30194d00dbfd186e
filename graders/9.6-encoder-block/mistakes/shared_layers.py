"""Planted mistake: the encoder repeats one block object n_layers times ([block] * n_layers)."""
# expect: shared-layers


class Encoder(Encoder):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.layers = nn.ModuleList([EncoderBlock(d_model, n_heads, d_ff, dropout, norm_first)] * n_layers)
