"""Planted mistake: the decoder repeats one block object n_layers times."""
# expect: shared-layers


class Decoder(Decoder):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        block = DecoderBlock(d_model, n_heads, d_ff, dropout, norm_first)
        self.layers = nn.ModuleList([block for _ in range(n_layers)])
