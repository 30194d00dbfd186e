"""Planted mistake: dropout on the weights written by hand, the keep mask applied with & (a bit operator)."""
# expect: bit-operator-on-floats


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)

        def split_heads(t):
            return t.view(batch, -1, self.n_heads, self.d_k).transpose(1, 2)

        q, k, v = split_heads(self.w_q(query)), split_heads(self.w_k(key)), split_heads(self.w_v(value))
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        self.attn_weights = weights
        if self.training and self.dropout.p > 0:
            keep = torch.rand_like(weights) >= self.dropout.p
            out = (weights & keep) / (1 - self.dropout.p) @ v
        out = out.transpose(1, 2).contiguous().view(batch, -1, self.d_model)
        return self.w_o(out)
