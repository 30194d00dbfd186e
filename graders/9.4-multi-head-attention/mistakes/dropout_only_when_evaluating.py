"""Planted mistake: the training test is the wrong way round (`not self.training`), so dropout is asked for in
eval mode only, where nn.Dropout does nothing: it never acts."""
# expect: no-dropout-in-training


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)
        q, k, v = (w(t).view(batch, -1, self.n_heads, self.d_k).transpose(1, 2)
                   for w, t in ((self.w_q, query), (self.w_k, key), (self.w_v, value)))
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        self.attn_weights = weights
        if not self.training and self.dropout.p > 0:
            out = self.dropout(weights) @ v
        return self.w_o(out.transpose(1, 2).contiguous().view(batch, -1, self.d_model))
