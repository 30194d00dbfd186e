"""Planted mistake: a feed-forward network of the student's own that adds its input back (a residual inside it)."""
# expect: fault-in-feed-forward
# also: fault-in-decoder-block


class ResidualFeedForward(FeedForward):
    def forward(self, x):
        return x + super().forward(x)


class DecoderBlock(DecoderBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        self.ffn = ResidualFeedForward(d_model, d_ff, dropout)
