"""Alternative: the causal mask from torch.full and tril on the device; the block written with keyword calls."""


def causal_mask(size, device=None):
    return torch.full((size, size), True, device=device).tril()


class DecoderBlock(DecoderBlock):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        if self.norm_first:
            h = self.norm_1(x)
            x = x + self.dropout(self.self_attn(query=h, key=h, value=h, mask=tgt_mask))
            x = x + self.dropout(self.cross_attn(query=self.norm_2(x), key=memory, value=memory, mask=src_mask))
            return x + self.dropout(self.ffn(self.norm_3(x)))
        x = self.norm_1(x + self.dropout(self.self_attn(query=x, key=x, value=x, mask=tgt_mask)))
        x = self.norm_2(x + self.dropout(self.cross_attn(query=x, key=memory, value=memory, mask=src_mask)))
        return self.norm_3(x + self.dropout(self.ffn(x)))
