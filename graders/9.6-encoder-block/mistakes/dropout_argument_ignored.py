"""Planted mistake: the dropout argument is accepted and never used (no nn.Dropout anywhere)."""
# expect: no-dropout
# also: residual-dropout-missing sublayer-dropout-missing


class EncoderBlock(EncoderBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        self.self_attn = MultiHeadAttention(d_model, n_heads)
        self.ffn = FeedForward(d_model, d_ff)

    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm_1(x)
            x = x + self.self_attn(h, h, h, mask)
            return x + self.ffn(self.norm_2(x))
        x = self.norm_1(x + self.self_attn(x, x, x, mask))
        return self.norm_2(x + self.ffn(x))
