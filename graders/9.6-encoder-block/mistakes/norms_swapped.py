"""Planted mistake: norm_2 wraps the self-attention and norm_1 the feed-forward network."""
# expect: norms-swapped


class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm_2(x)
            x = x + self.dropout(self.self_attn(h, h, h, mask))
            return x + self.dropout(self.ffn(self.norm_1(x)))
        x = self.norm_2(x + self.dropout(self.self_attn(x, x, x, mask)))
        return self.norm_1(x + self.dropout(self.ffn(x)))
