"""Planted mistake: the feed-forward sub-layer reads the block's input, not the attention sub-layer's result."""
# expect: fault-in-wiring
# also: fault-in-encoder-block

class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm_1(x)
            a = x + self.dropout(self.self_attn(h, h, h, mask))
            return a + self.dropout(self.ffn(self.norm_2(x)))
        a = self.norm_1(x + self.dropout(self.self_attn(x, x, x, mask)))
        return self.norm_2(a + self.dropout(self.ffn(x)))
