"""Planted mistake: a cross-attention of the student's own whose softmax normalises over the queries (dim=-2).
It drops no attention weight in training either."""
# expect: fault-in-cross-attention
# also: fault-in-decoder-block sublayer-dropout-missing


class CrossAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        def heads(t):
            return t.view(t.size(0), -1, self.n_heads, self.d_k).transpose(1, 2)

        scores = heads(self.w_q(query)) @ heads(self.w_k(key)).transpose(-2, -1) / self.d_k ** 0.5
        if mask is not None:
            scores = scores.masked_fill(mask.logical_not(), -1e9)
        mixed = torch.softmax(scores, dim=-2) @ heads(self.w_v(value))
        return self.w_o(mixed.transpose(1, 2).flatten(2))


class DecoderBlock(DecoderBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        self.cross_attn = CrossAttention(d_model, n_heads, dropout)
