"""Planted mistake: the pre-norm residual sums added in place (x += ...), which changes the caller's x."""
# expect: modifies-input


class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        if not self.norm_first:
            return super().forward(x, mask)
        h = self.norm_1(x)
        x += self.dropout(self.self_attn(h, h, h, mask))
        x += self.dropout(self.ffn(self.norm_2(x)))
        return x
