"""Planted mistake: the mask unsqueezed at dim 1, as the Annotated Transformer does for its (batch, 1, k_len) masks.
Written whole, its forward leaves dropout out."""
# expect: mask-unsqueezed
# also: no-dropout-in-training


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)
        if mask is not None:
            mask = mask.unsqueeze(1)  # "the same mask for every head"

        def split(t):
            return t.view(batch, -1, self.n_heads, self.d_k).transpose(1, 2)

        q, k, v = split(self.w_q(query)), split(self.w_k(key)), split(self.w_v(value))
        out, self.attn_weights = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(out.transpose(1, 2).reshape(batch, -1, self.d_model))
