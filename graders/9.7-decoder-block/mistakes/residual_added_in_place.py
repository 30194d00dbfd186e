"""Planted mistake: the pre-norm residual sums added in place (x += ...), which changes the caller's x."""
# expect: modifies-input


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        if not self.norm_first:
            return super().forward(x, memory, src_mask, tgt_mask)
        h = self.norm_1(x)
        x += self.dropout(self.self_attn(h, h, h, tgt_mask))
        h = self.norm_2(x)
        x += self.dropout(self.cross_attn(h, memory, memory, src_mask))
        x += self.dropout(self.ffn(self.norm_3(x)))
        return x
