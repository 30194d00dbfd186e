"""Planted mistake: the target's causal mask is given to cross-attention as well."""
# expect: causal-mask-in-cross-attention
# also: src-mask-ignored


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        if self.norm_first:
            h = self.norm_1(x)
            x = x + self.dropout(self.self_attn(h, h, h, tgt_mask))
            h = self.norm_2(x)
            x = x + self.dropout(self.cross_attn(h, memory, memory, tgt_mask))
            return x + self.dropout(self.ffn(self.norm_3(x)))
        x = self.norm_1(x + self.dropout(self.self_attn(x, x, x, tgt_mask)))
        x = self.norm_2(x + self.dropout(self.cross_attn(x, memory, memory, tgt_mask)))
        return self.norm_3(x + self.dropout(self.ffn(x)))
