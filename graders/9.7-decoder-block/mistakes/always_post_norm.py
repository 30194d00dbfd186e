"""Planted mistake: norm_first is ignored: the block is always post-norm, as in the paper."""
# expect: post-norm-instead-of-pre-norm
# also: norm-on-residual-path


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        x = self.norm_1(x + self.dropout(self.self_attn(x, x, x, tgt_mask)))
        x = self.norm_2(x + self.dropout(self.cross_attn(x, memory, memory, src_mask)))
        return self.norm_3(x + self.dropout(self.ffn(x)))
