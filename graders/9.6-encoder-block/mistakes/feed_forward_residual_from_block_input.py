"""Planted mistake: the feed-forward sub-layer's residual adds the block's input, not its own input."""
# expect: fault-in-wiring
# also: fault-in-encoder-block

class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm_1(x)
            a = x + self.dropout(self.self_attn(h, h, h, mask))
            return x + self.dropout(self.ffn(self.norm_2(a)))
        a = self.norm_1(x + self.dropout(self.self_attn(x, x, x, mask)))
        return self.norm_2(x + self.dropout(self.ffn(a)))
