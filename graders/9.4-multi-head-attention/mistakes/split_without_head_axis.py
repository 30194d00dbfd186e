"""Planted mistake: the heads split with view(batch, len, n_heads, d_k) and never transposed."""
# expect: split-heads-not-moved


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)

        def split_heads(t):
            return t.view(batch, -1, self.n_heads, self.d_k)  # (batch, len, n_heads, d_k): no transpose

        q, k, v = split_heads(self.w_q(query)), split_heads(self.w_k(key)), split_heads(self.w_v(value))
        out, self.attn_weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(out.contiguous().view(batch, -1, self.d_model))
