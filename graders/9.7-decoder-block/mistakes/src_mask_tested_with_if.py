"""Planted mistake: `if src_mask:` where `if src_mask is not None:` was meant."""
# expect: tensor-as-truth-value


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        if src_mask:
            src_mask = src_mask.bool()
        return super().forward(x, memory, src_mask, tgt_mask)
