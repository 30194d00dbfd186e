"""Planted mistake: attention written with einsum, the softmax taken over the heads (dim=1), not over the keys."""
# expect: softmax-over-heads


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        q = self.w_q(query).unflatten(-1, (self.n_heads, self.d_k))  # (batch, q_len, n_heads, d_k)
        k = self.w_k(key).unflatten(-1, (self.n_heads, self.d_k))
        v = self.w_v(value).unflatten(-1, (self.n_heads, self.d_k))
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * self.d_k**-0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        self.attn_weights = scores.softmax(dim=1)
        return self.w_o(torch.einsum("bhqk,bkhd->bqhd", self.dropout(self.attn_weights), v).flatten(-2))
