"""Planted mistake: dropout only inside the sub-layers; their outputs join the residual sum undropped."""
# expect: residual-dropout-missing


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        if self.norm_first:
            h = self.norm_1(x)
            x = x + self.self_attn(h, h, h, tgt_mask)
            h = self.norm_2(x)
            x = x + self.cross_attn(h, memory, memory, src_mask)
            return x + self.ffn(self.norm_3(x))
        x = self.norm_1(x + self.self_attn(x, x, x, tgt_mask))
        x = self.norm_2(x + self.cross_attn(x, memory, memory, src_mask))
        return self.norm_3(x + self.ffn(x))
