"""Planted mistake: F.dropout without training=self.training: it drops in eval mode too."""
# expect: dropout-in-eval


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        if self.norm_first:
            h = self.norm_1(x)
            x = x + nn.functional.dropout(self.self_attn(h, h, h, tgt_mask), self.dropout.p)
            h = self.norm_2(x)
            x = x + nn.functional.dropout(self.cross_attn(h, memory, memory, src_mask), self.dropout.p)
            return x + nn.functional.dropout(self.ffn(self.norm_3(x)), self.dropout.p)
        x = self.norm_1(x + nn.functional.dropout(self.self_attn(x, x, x, tgt_mask), self.dropout.p))
        x = self.norm_2(x + nn.functional.dropout(self.cross_attn(x, memory, memory, src_mask), self.dropout.p))
        return self.norm_3(x + nn.functional.dropout(self.ffn(x), self.dropout.p))
