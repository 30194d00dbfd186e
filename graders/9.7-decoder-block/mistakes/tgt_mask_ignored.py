"""Planted mistake: the self-attention is given no mask: every position sees the future (tgt_mask never used)."""
# expect: tgt-mask-ignored


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        if self.norm_first:
            h = self.norm_1(x)
            x = x + self.dropout(self.self_attn(h, h, h))
            h = self.norm_2(x)
            x = x + self.dropout(self.cross_attn(h, memory, memory, src_mask))
            return x + self.dropout(self.ffn(self.norm_3(x)))
        x = self.norm_1(x + self.dropout(self.self_attn(x, x, x)))
        x = self.norm_2(x + self.dropout(self.cross_attn(x, memory, memory, src_mask)))
        return self.norm_3(x + self.dropout(self.ffn(x)))
