"""Planted mistake: the sub-layers' outputs replace their inputs instead of being added to them."""
# expect: missing-residual


class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm_1(x)
            x = self.dropout(self.self_attn(h, h, h, mask))
            return self.dropout(self.ffn(self.norm_2(x)))
        x = self.norm_1(self.dropout(self.self_attn(x, x, x, mask)))
        return self.norm_2(self.dropout(self.ffn(x)))
