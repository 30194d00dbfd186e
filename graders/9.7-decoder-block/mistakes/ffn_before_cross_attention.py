"""Planted mistake: the feed-forward sub-layer runs before cross-attention (each keeps its own norm)."""
# expect: sublayers-out-of-order


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        if self.norm_first:
            h = self.norm_1(x)
            x = x + self.dropout(self.self_attn(h, h, h, tgt_mask))
            x = x + self.dropout(self.ffn(self.norm_3(x)))
            h = self.norm_2(x)
            return x + self.dropout(self.cross_attn(h, memory, memory, src_mask))
        x = self.norm_1(x + self.dropout(self.self_attn(x, x, x, tgt_mask)))
        x = self.norm_3(x + self.dropout(self.ffn(x)))
        return self.norm_2(x + self.dropout(self.cross_attn(x, memory, memory, src_mask)))
