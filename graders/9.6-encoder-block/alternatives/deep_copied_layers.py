"""Alternative: the encoder's layers deep-copied from one block (as the Annotated Transformer's clones)."""
import copy


class Encoder(Encoder):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(0, d_model, n_heads, d_ff, dropout, norm_first)
        block = EncoderBlock(d_model, n_heads, d_ff, dropout, norm_first)
        self.layers = nn.ModuleList([copy.deepcopy(block) for _ in range(n_layers)])
