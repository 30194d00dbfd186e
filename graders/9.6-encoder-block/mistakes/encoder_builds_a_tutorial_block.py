"""Planted mistake: EncoderBlock is right, but the Encoder builds its layers from a second block class copied from a
tutorial, which normalises each sub-layer's output before the residual sum: x + norm(Sublayer(x))."""
# expect: fault-in-encoder-block


class TutorialEncoderLayer(EncoderBlock):
    def forward(self, x, mask=None):
        x = x + self.dropout(self.norm_1(self.self_attn(x, x, x, mask)))
        return x + self.dropout(self.norm_2(self.ffn(x)))


class Encoder(Encoder):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.layers = nn.ModuleList(
            [TutorialEncoderLayer(d_model, n_heads, d_ff, dropout, norm_first) for _ in range(n_layers)])
