"""Planted mistake: always normalise the sub-layer's input (pre-norm), whatever norm_first says."""
# expect: pre-norm-instead-of-post-norm


class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        h = self.norm_1(x)
        x = x + self.dropout(self.self_attn(h, h, h, mask))
        return x + self.dropout(self.ffn(self.norm_2(x)))
