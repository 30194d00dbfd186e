"""Planted mistake: any 2-D mask taken for a (batch, seq) padding mask and unsqueezed to (batch, 1, 1, seq): one
(seq, seq) mask for the whole batch, which the contract allows, no longer broadcasts."""
# expect: failed


class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        if mask is not None and mask.dim() == 2:
            mask = mask[:, None, None, :]
        return super().forward(x, mask)
