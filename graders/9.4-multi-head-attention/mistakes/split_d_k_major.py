"""Planted mistake: the heads split d_k-major, view(batch, len, d_k, n_heads), merged as they should be."""
# expect: split-d-k-major


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)

        def split(t):
            return t.view(batch, -1, self.d_k, self.n_heads).permute(0, 3, 1, 2)

        q, k, v = split(self.w_q(query)), split(self.w_k(key)), split(self.w_v(value))
        out, self.attn_weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(out.transpose(1, 2).reshape(batch, -1, self.d_model))
