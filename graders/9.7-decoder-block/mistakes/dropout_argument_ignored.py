"""Planted mistake: the dropout argument is accepted and never used (no dropout anywhere)."""
# expect: no-dropout
# also: residual-dropout-missing sublayer-dropout-missing


class DecoderBlock(DecoderBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        self.self_attn = MultiHeadAttention(d_model, n_heads)
        self.cross_attn = MultiHeadAttention(d_model, n_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.dropout = nn.Identity()
