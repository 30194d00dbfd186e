"""Alternative: one residual helper that wraps any sub-layer (given as a function) with its norm and dropout."""


class EncoderBlock(EncoderBlock):
    def _residual(self, x, norm, sublayer):
        if self.norm_first:
            return x + self.dropout(sublayer(norm(x)))
        return norm(x + self.dropout(sublayer(x)))

    def forward(self, x, mask=None):
        x = self._residual(x, self.norm_1, lambda h: self.self_attn(h, h, h, mask=mask))
        return self._residual(x, self.norm_2, self.ffn)
