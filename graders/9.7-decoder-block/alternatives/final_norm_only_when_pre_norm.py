"""Alternative: the Decoder calls its final norm only in pre-norm, and passes the masks by keyword."""


class Decoder(Decoder):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.pre_norm = norm_first

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, src_mask=src_mask)
        return self.norm(x) if self.pre_norm else x
