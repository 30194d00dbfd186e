"""Planted mistake: `if mask:` where `if mask is not None:` was meant."""
# expect: tensor-as-truth-value


class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        if mask:
            mask = mask.bool()
        return super().forward(x, mask)
