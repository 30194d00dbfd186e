"""Planted mistake: post-norm only, dropout applied to the residual sum, norm_1(dropout(x + self_attn(...)))."""
# expect: dropout-after-residual


class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm_1(x)
            x = x + self.dropout(self.self_attn(h, h, h, mask))
            return x + self.dropout(self.ffn(self.norm_2(x)))
        x = self.norm_1(self.dropout(x + self.self_attn(x, x, x, mask)))
        return self.norm_2(self.dropout(x + self.ffn(x)))
