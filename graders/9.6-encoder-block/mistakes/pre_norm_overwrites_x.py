"""Planted mistake: pre-norm written as x = norm(x), then x = x + Sublayer(x): the residual path carries the normalised
x. It is not post-norm, and its zeroed-sub-layers output is the norms applied to x."""
# expect: norm-on-residual-path
# also: fault-in-wiring fault-in-encoder-block


class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        if not self.norm_first:
            return super().forward(x, mask)
        x = self.norm_1(x)
        x = x + self.dropout(self.self_attn(x, x, x, mask))
        x = self.norm_2(x)
        return x + self.dropout(self.ffn(x))
