"""Planted mistake: a self-attention of the student's own that scales the scores by sqrt(d_model), not sqrt(d_k).
It drops no attention weight in training either."""
# expect: fault-in-self-attention
# also: fault-in-encoder-block sublayer-dropout-missing


class SelfAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)
        q, k, v = (w(t).view(batch, -1, self.n_heads, self.d_k).transpose(1, 2)
                   for w, t in ((self.w_q, query), (self.w_k, key), (self.w_v, value)))
        scores = q @ k.transpose(-2, -1) / self.d_model ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        heads = torch.softmax(scores, dim=-1) @ v
        return self.w_o(heads.transpose(1, 2).reshape(batch, -1, self.d_model))


class EncoderBlock(EncoderBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        self.self_attn = SelfAttention(d_model, n_heads, dropout)
