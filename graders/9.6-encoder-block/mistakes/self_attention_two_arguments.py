"""Planted mistake: self-attention called as self_attn(x, mask), as if it took one input."""
# expect: attention-arguments


class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm_1(x)
            x = x + self.dropout(self.self_attn(h, mask))
            return x + self.dropout(self.ffn(self.norm_2(x)))
        x = self.norm_1(x + self.dropout(self.self_attn(x, mask)))
        return self.norm_2(x + self.dropout(self.ffn(x)))
