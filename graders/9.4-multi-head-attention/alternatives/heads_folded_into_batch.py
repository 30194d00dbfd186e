"""Alternative: heads folded into the batch (batch * n_heads, len, d_k), the mask expanded by torch.broadcast_shapes."""


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        b, q_len, k_len, h = query.size(0), query.size(1), key.size(1), self.n_heads

        def fold(t):  # (batch, len, d_model) -> (batch, n_heads, len, d_k) -> (batch * n_heads, len, d_k)
            return t.unflatten(-1, (h, self.d_k)).transpose(1, 2).flatten(0, 1)

        q, k, v = fold(self.w_q(query)), fold(self.w_k(key)), fold(self.w_v(value))
        if mask is not None:
            # One mask per (batch element, head), as the folded batch needs (torch imports sympy on the first call).
            mask = mask.expand(torch.broadcast_shapes(mask.shape, (b, h, q_len, k_len))).flatten(0, 1)
        out, weights = scaled_dot_product_attention(q, k, v, mask)  # (batch * n_heads, q_len, d_k)
        self.attn_weights = weights.unflatten(0, (b, h))  # (batch, n_heads, q_len, k_len)
        if self.training and self.dropout.p > 0:
            out = self.dropout(weights) @ v
        out = out.unflatten(0, (b, h)).transpose(1, 2).flatten(2)  # (batch, q_len, n_heads * d_k)
        return self.w_o(out)
