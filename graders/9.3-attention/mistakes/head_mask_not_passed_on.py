"""Planted mistake: AttentionHead.forward takes a mask and never hands it to the attention."""
# expect: head-mask-ignored


class AttentionHead(AttentionHead):
    def forward(self, x, context=None, mask=None):
        return super().forward(x, context=context, mask=None)
