"""Planted mistake (localised): the values averaged with the weights transposed (runs when q_len = k_len)."""
# expect: fault-in-values


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        b = query.size(0)
        q = self.w_q(query).reshape(b, -1, self.n_heads, self.d_k).transpose(1, 2)
        k = self.w_k(key).reshape(b, -1, self.n_heads, self.d_k).transpose(1, 2)
        v = self.w_v(value).reshape(b, -1, self.n_heads, self.d_k).transpose(1, 2)
        _, self.attn_weights = scaled_dot_product_attention(q, k, v, mask)
        out = self.dropout(self.attn_weights).transpose(-2, -1) @ v  # keys and queries mixed up
        return self.w_o(out.transpose(1, 2).reshape(b, -1, self.d_model))
