"""Planted mistake: post-norm cross-attention takes its queries from the block's input, not from the self-attention
sub-layer's result."""
# expect: fault-in-wiring
# also: fault-in-decoder-block


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        if self.norm_first:
            return super().forward(x, memory, src_mask, tgt_mask)
        h = self.norm_1(x + self.dropout(self.self_attn(x, x, x, tgt_mask)))
        h = self.norm_2(h + self.dropout(self.cross_attn(x, memory, memory, src_mask)))
        return self.norm_3(h + self.dropout(self.ffn(h)))
