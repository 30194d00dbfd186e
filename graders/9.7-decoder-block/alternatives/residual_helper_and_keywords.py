"""Alternative: one residual helper for the three sub-layers, each given as a function; attention called by keyword."""


class DecoderBlock(DecoderBlock):
    def _sublayer(self, x, norm, sublayer):
        if self.norm_first:
            return x + self.dropout(sublayer(norm(x)))
        return norm(x + self.dropout(sublayer(x)))

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        x = self._sublayer(x, self.norm_1, lambda h: self.self_attn(query=h, key=h, value=h, mask=tgt_mask))
        x = self._sublayer(x, self.norm_2, lambda h: self.cross_attn(query=h, key=memory, value=memory, mask=src_mask))
        return self._sublayer(x, self.norm_3, self.ffn)
