"""Planted mistake: BERT's additive mask, (1 - mask) * -1e9, made from the contract's bool mask."""
# expect: arithmetic-on-bool-mask


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)

        def split_heads(t):
            return t.view(batch, -1, self.n_heads, self.d_k).transpose(1, 2)

        q, k, v = split_heads(self.w_q(query)), split_heads(self.w_k(key)), split_heads(self.w_v(value))
        scores = q @ k.transpose(-2, -1) / self.d_k**0.5
        if mask is not None:
            scores = scores + (1 - mask) * -1e9
        weights = scores.softmax(dim=-1)
        self.attn_weights = weights
        out = (self.dropout(weights) @ v).transpose(1, 2).contiguous().view(batch, -1, self.d_model)
        return self.w_o(out)
