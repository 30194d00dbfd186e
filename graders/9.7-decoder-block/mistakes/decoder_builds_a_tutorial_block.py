"""Planted mistake: DecoderBlock is right, but the Decoder builds its layers from a second block class copied from a
tutorial, which normalises each sub-layer's output before the residual sum: x + norm(Sublayer(x))."""
# expect: fault-in-decoder-block


class TutorialDecoderLayer(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        x = x + self.dropout(self.norm_1(self.self_attn(x, x, x, tgt_mask)))
        x = x + self.dropout(self.norm_2(self.cross_attn(x, memory, memory, src_mask)))
        return x + self.dropout(self.norm_3(self.ffn(x)))


class Decoder(Decoder):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.layers = nn.ModuleList(
            [TutorialDecoderLayer(d_model, n_heads, d_ff, dropout, norm_first) for _ in range(n_layers)])
