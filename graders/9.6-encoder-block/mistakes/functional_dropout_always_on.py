"""Planted mistake: F.dropout without training=self.training, so dropout still acts in eval mode."""
# expect: dropout-in-eval
import torch.nn.functional as F


class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        p = self.dropout.p
        if self.norm_first:
            h = self.norm_1(x)
            x = x + F.dropout(self.self_attn(h, h, h, mask), p)
            return x + F.dropout(self.ffn(self.norm_2(x)), p)
        x = self.norm_1(x + F.dropout(self.self_attn(x, x, x, mask), p))
        return self.norm_2(x + F.dropout(self.ffn(x), p))
