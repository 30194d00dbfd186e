"""Planted mistake: cross-attention calls the self-attention module (cross_attn is built, and never used)."""
# expect: self-attention-reused-for-cross-attention


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        if self.norm_first:
            h = self.norm_1(x)
            x = x + self.dropout(self.self_attn(h, h, h, tgt_mask))
            x = x + self.dropout(self.self_attn(self.norm_2(x), memory, memory, src_mask))
            return x + self.dropout(self.ffn(self.norm_3(x)))
        x = self.norm_1(x + self.dropout(self.self_attn(x, x, x, tgt_mask)))
        x = self.norm_2(x + self.dropout(self.self_attn(x, memory, memory, src_mask)))
        return self.norm_3(x + self.dropout(self.ffn(x)))
