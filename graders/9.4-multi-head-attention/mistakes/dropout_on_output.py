"""Planted mistake: dropout on the heads' outputs instead of the attention weights."""
# expect: dropout-on-output


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)
        q, k, v = (t.reshape(batch, t.size(1), self.n_heads, self.d_k).permute(0, 2, 1, 3)
                   for t in (self.w_q(query), self.w_k(key), self.w_v(value)))
        heads, self.attn_weights = scaled_dot_product_attention(q, k, v, mask)
        heads = self.dropout(heads)  # (batch, n_heads, q_len, d_k): drops features, not keys
        return self.w_o(heads.permute(0, 2, 1, 3).reshape(batch, -1, self.d_model))
