"""Planted mistake: the values are projected from `key` (fine for self-attention, wrong for cross-attention).
Written whole, its forward leaves dropout out."""
# expect: value-from-key
# also: no-dropout-in-training


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)

        def split_heads(t):
            return t.view(batch, -1, self.n_heads, self.d_k).transpose(1, 2)

        q, k, v = split_heads(self.w_q(query)), split_heads(self.w_k(key)), split_heads(self.w_v(key))
        out, self.attn_weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(out.transpose(1, 2).contiguous().view(batch, -1, self.d_model))
