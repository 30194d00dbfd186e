"""Planted mistake: pre-norm, the memory normalised with norm_2 as well before cross-attention."""
# expect: memory-normalised


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        if not self.norm_first:
            return super().forward(x, memory, src_mask, tgt_mask)
        h = self.norm_1(x)
        x = x + self.dropout(self.self_attn(h, h, h, tgt_mask))
        h, m = self.norm_2(x), self.norm_2(memory)
        x = x + self.dropout(self.cross_attn(h, m, m, src_mask))
        return x + self.dropout(self.ffn(self.norm_3(x)))
