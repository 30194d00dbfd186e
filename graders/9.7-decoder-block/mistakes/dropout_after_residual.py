"""Planted mistake: dropout applied to each residual sum, Dropout(x + Sublayer(x)), which drops parts of x too."""
# expect: dropout-after-residual


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        if self.norm_first:
            h = self.norm_1(x)
            x = self.dropout(x + self.self_attn(h, h, h, tgt_mask))
            h = self.norm_2(x)
            x = self.dropout(x + self.cross_attn(h, memory, memory, src_mask))
            return self.dropout(x + self.ffn(self.norm_3(x)))
        x = self.norm_1(self.dropout(x + self.self_attn(x, x, x, tgt_mask)))
        x = self.norm_2(self.dropout(x + self.cross_attn(x, memory, memory, src_mask)))
        return self.norm_3(self.dropout(x + self.ffn(x)))
