"""Planted mistake: norm_first is ignored: the block is always pre-norm, the modern default."""
# expect: pre-norm-instead-of-post-norm


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        h = self.norm_1(x)
        x = x + self.dropout(self.self_attn(h, h, h, tgt_mask))
        h = self.norm_2(x)
        x = x + self.dropout(self.cross_attn(h, memory, memory, src_mask))
        return x + self.dropout(self.ffn(self.norm_3(x)))
