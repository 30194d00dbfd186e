"""Planted mistake: always normalise after the residual sum (post-norm), whatever norm_first says."""
# expect: post-norm-instead-of-pre-norm
# also: norm-on-residual-path


class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        x = self.norm_1(x + self.dropout(self.self_attn(x, x, x, mask)))
        return self.norm_2(x + self.dropout(self.ffn(x)))
