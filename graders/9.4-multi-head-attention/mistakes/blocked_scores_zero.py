"""Planted mistake (localised): blocked scores filled with 0 instead of -inf, so blocked keys keep some weight."""
# expect: fault-in-weights


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        n, d_k = self.n_heads, self.d_k
        q, k, v = (w(t).unflatten(-1, (n, d_k)).transpose(1, 2) for w, t in zip(
            (self.w_q, self.w_k, self.w_v), (query, key, value), strict=True))
        scores = q @ k.mT / d_k**0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, 0.0)
        self.attn_weights = scores.softmax(-1)
        return self.w_o((self.dropout(self.attn_weights) @ v).transpose(1, 2).flatten(2))
