"""Planted mistake: the mask turned into torch's convention (True = blocked) before it is used."""
# expect: mask-inverted

class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        if mask is not None:
            mask = mask == 0  # True = padding, as nn.Transformer
        return super().forward(x, mask)
