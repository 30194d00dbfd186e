"""Planted mistake: pre-norm normalises both sub-layers' inputs with norm_1."""
# expect: norm-reused

class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm_1(x)
            x = x + self.dropout(self.self_attn(h, h, h, mask))
            return x + self.dropout(self.ffn(self.norm_1(x)))
        x = self.norm_1(x + self.dropout(self.self_attn(x, x, x, mask)))
        return self.norm_2(x + self.dropout(self.ffn(x)))
