"""Planted mistake: the block falls back to a causal mask when tgt_mask is None, where None means no mask."""
# expect: causal-mask-when-none


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        if tgt_mask is None:
            tgt_mask = causal_mask(x.size(1), device=x.device)
        return super().forward(x, memory, src_mask, tgt_mask)
