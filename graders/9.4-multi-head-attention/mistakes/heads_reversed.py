"""Planted mistake: the heads concatenated last first (the heads' axis flipped before torch.cat)."""
# expect: heads-out-of-order


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        q, k, v = (w(t).unflatten(-1, (self.n_heads, self.d_k)).transpose(1, 2)
                   for w, t in ((self.w_q, query), (self.w_k, key), (self.w_v, value)))
        out, self.attn_weights = scaled_dot_product_attention(q, k, v, mask)  # (batch, n_heads, q_len, d_k)
        return self.w_o(torch.cat(out.flip(1).unbind(1), dim=-1))  # head h first, head 1 last
