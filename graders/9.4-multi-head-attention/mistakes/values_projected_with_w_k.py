"""Planted mistake: the values projected with w_k (a copy-paste slip; w_v is never used), the keys rightly with w_k.
It is not the two projections swapped, so it must not be called that, even where one key makes them look alike."""
# expect: failed


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)

        def split_heads(t):
            return t.view(batch, -1, self.n_heads, self.d_k).transpose(1, 2)

        q, k, v = split_heads(self.w_q(query)), split_heads(self.w_k(key)), split_heads(self.w_k(value))
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        self.attn_weights = weights
        if self.training and self.dropout.p > 0:
            out = self.dropout(weights) @ v
        return self.w_o(out.transpose(1, 2).contiguous().view(batch, -1, self.d_model))
