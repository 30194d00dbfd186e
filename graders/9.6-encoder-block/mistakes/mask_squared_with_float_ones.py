"""Planted mistake: the padding mask made square by & with float ones (a bit operator on a float tensor)."""
# expect: bit-operator-on-floats


class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        if mask is not None:
            seq = x.size(1)
            mask = mask & torch.ones(seq, seq, device=x.device)
        return super().forward(x, mask)
