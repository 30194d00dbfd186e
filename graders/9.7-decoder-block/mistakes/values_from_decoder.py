"""Planted mistake: cross-attention's keys come from the memory, its values from the decoder's states."""
# expect: values-from-decoder


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        if self.norm_first:
            return super().forward(x, memory, src_mask, tgt_mask)
        attended = self.self_attn(query=x, key=x, value=x, mask=tgt_mask)
        x = self.norm_1(x + self.dropout(attended))
        context = self.cross_attn(query=x, key=memory, value=x, mask=src_mask)
        x = self.norm_2(x + self.dropout(context))
        return self.norm_3(x + self.dropout(self.ffn(x)))
