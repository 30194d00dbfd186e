"""Alternative: the causal mask as the complement of the strict upper triangle; blocks via separate dropouts."""


def causal_mask(size, device=None):
    return ~torch.ones(size, size, dtype=torch.bool, device=device).triu(diagonal=1)


class DecoderBlock(DecoderBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        del self.dropout
        self.drops = nn.ModuleList([nn.Dropout(dropout) for _ in range(3)])

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        sublayers = [lambda h: self.self_attn(h, h, h, tgt_mask),
                     lambda h: self.cross_attn(h, memory, memory, src_mask), self.ffn]
        for sublayer, norm, drop in zip(sublayers, (self.norm_1, self.norm_2, self.norm_3), self.drops, strict=True):
            x = x + drop(sublayer(norm(x))) if self.norm_first else norm(x + drop(sublayer(x)))
        return x
