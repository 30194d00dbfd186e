"""Planted mistake: dropout only inside the sub-layers; their outputs join the residual sum undropped."""
# expect: residual-dropout-missing


class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm_1(x)
            x = x + self.self_attn(h, h, h, mask)
            return x + self.ffn(self.norm_2(x))
        x = self.norm_1(x + self.self_attn(x, x, x, mask))
        return self.norm_2(x + self.ffn(x))
