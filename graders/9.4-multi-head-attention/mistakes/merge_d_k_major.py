"""Planted mistake: merge the heads with d_k outermost, interleaving the heads' features."""
# expect: merge-d-k-major


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)

        def split_heads(t):
            return t.view(batch, -1, self.n_heads, self.d_k).transpose(1, 2)

        q, k, v = split_heads(self.w_q(query)), split_heads(self.w_k(key)), split_heads(self.w_v(value))
        out, self.attn_weights = scaled_dot_product_attention(q, k, v, mask)  # (batch, heads, q_len, d_k)
        out = out.permute(0, 2, 3, 1).reshape(batch, -1, self.d_model)  # (batch, q_len, d_k * heads)
        return self.w_o(out)
