"""Planted mistake: keys and values split into heads with the queries' length (right only when both agree)."""
# expect: split-length-not-the-tensors


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch, q_len = query.size(0), query.size(1)

        def split_heads(t):
            return t.view(batch, q_len, self.n_heads, self.d_k).transpose(1, 2)

        q, k, v = split_heads(self.w_q(query)), split_heads(self.w_k(key)), split_heads(self.w_v(value))
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        self.attn_weights = weights
        if self.training and self.dropout.p > 0:
            out = self.dropout(weights) @ v
        out = out.transpose(1, 2).contiguous().view(batch, q_len, self.d_model)
        return self.w_o(out)
