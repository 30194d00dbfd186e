"""Planted mistake: pre-norm written as x = norm(x), then x = x + Sublayer(x), for each sub-layer: the residual path
carries the normalised x. It is not post-norm, and its zeroed-sub-layers output is the norms applied to x."""
# expect: norm-on-residual-path
# also: fault-in-wiring fault-in-decoder-block


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        if not self.norm_first:
            return super().forward(x, memory, src_mask, tgt_mask)
        x = self.norm_1(x)
        x = x + self.dropout(self.self_attn(x, x, x, tgt_mask))
        x = self.norm_2(x)
        x = x + self.dropout(self.cross_attn(x, memory, memory, src_mask))
        x = self.norm_3(x)
        return x + self.dropout(self.ffn(x))
