"""Alternative: heads split with unflatten and einsum, scores and mixing written out, finfo.min for blocked keys."""


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        q = self.w_q(query).unflatten(-1, (self.n_heads, self.d_k))  # (batch, q_len, n_heads, d_k)
        k = self.w_k(key).unflatten(-1, (self.n_heads, self.d_k))
        v = self.w_v(value).unflatten(-1, (self.n_heads, self.d_k))
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / self.d_k**0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = weights.masked_fill(~mask, 0.0)
        self.attn_weights = weights
        out = torch.einsum("bhqk,bkhd->bqhd", self.dropout(weights), v)  # (batch, q_len, n_heads, d_k)
        return self.w_o(out.flatten(-2))
