"""Planted mistake: split the heads with one view, (batch, n_heads, len, d_k), without the transpose."""
# expect: split-without-transpose


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)

        def split_heads(t):
            return t.view(batch, self.n_heads, -1, self.d_k)

        q, k, v = split_heads(self.w_q(query)), split_heads(self.w_k(key)), split_heads(self.w_v(value))
        out, self.attn_weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(out.contiguous().view(batch, -1, self.d_model))
