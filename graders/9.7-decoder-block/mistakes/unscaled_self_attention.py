"""Planted mistake: a masked self-attention of the student's own that forgets to scale the scores by sqrt(d_k).
It drops no attention weight in training either."""
# expect: fault-in-self-attention
# also: fault-in-decoder-block sublayer-dropout-missing


class MaskedSelfAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch, length, _ = query.shape
        q, k, v = (w(query).reshape(batch, length, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.w_q, self.w_k, self.w_v))
        scores = torch.matmul(q, k.transpose(2, 3))
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        out = torch.matmul(scores.softmax(-1), v).transpose(1, 2).reshape(batch, length, self.d_model)
        return self.w_o(out)


class DecoderBlock(DecoderBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        self.self_attn = MaskedSelfAttention(d_model, n_heads, dropout)
