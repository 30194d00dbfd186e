"""Planted mistake: the source padding mask never reaches the cross-attention."""
# expect: src-mask-ignored


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        return super().forward(x, memory, None, tgt_mask)
