"""Planted mistake: the block turns the bool mask into an additive one, (1 - mask) * -1e9, before attending."""
# expect: arithmetic-on-bool-mask


class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        if mask is not None:
            mask = (1 - mask) * -1e9
        return super().forward(x, mask)
