"""Alternative: every step named, the norms applied to q, k and v separately, sums written with torch.add."""


class EncoderBlock(EncoderBlock):
    def forward(self, x, mask=None):
        if self.norm_first:
            attended = self.self_attn(self.norm_1(x), self.norm_1(x), self.norm_1(x), mask=mask)
            after_attention = torch.add(x, self.dropout(attended))
            fed_forward = self.ffn(self.norm_2(after_attention))
            return torch.add(after_attention, self.dropout(fed_forward))
        attended = self.self_attn(query=x, key=x, value=x, mask=mask)
        after_attention = self.norm_1(torch.add(x, self.dropout(attended)))
        fed_forward = self.ffn(after_attention)
        return self.norm_2(torch.add(after_attention, self.dropout(fed_forward)))
