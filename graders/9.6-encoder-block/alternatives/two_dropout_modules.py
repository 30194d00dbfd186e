"""Alternative: one nn.Dropout per sub-layer, and post-norm and pre-norm as two methods."""


class EncoderBlock(EncoderBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        del self.dropout
        self.dropout_1 = nn.Dropout(dropout)
        self.dropout_2 = nn.Dropout(dropout)

    def _post_norm(self, x, mask):
        x = self.norm_1(x + self.dropout_1(self.self_attn(x, x, x, mask)))
        return self.norm_2(x + self.dropout_2(self.ffn(x)))

    def _pre_norm(self, x, mask):
        h = self.norm_1(x)
        x = x + self.dropout_1(self.self_attn(h, h, h, mask))
        return x + self.dropout_2(self.ffn(self.norm_2(x)))

    def forward(self, x, mask=None):
        return self._pre_norm(x, mask) if self.norm_first else self._post_norm(x, mask)
