"""Alternative: the decoder's layers deep-copied from one block; keyword arguments throughout."""
import copy


class Decoder(Decoder):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(0, d_model, n_heads, d_ff, dropout, norm_first)
        block = DecoderBlock(d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first)
        self.layers = nn.ModuleList(copy.deepcopy(block) for _ in range(n_layers))

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        for layer in self.layers:
            x = layer(x, memory, src_mask=src_mask, tgt_mask=tgt_mask)
        return self.norm(x)
