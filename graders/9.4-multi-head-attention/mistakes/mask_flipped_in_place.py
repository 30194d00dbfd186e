"""Planted mistake: attention written inline, the blocked positions found with mask.logical_not_(),
which flips the caller's mask in place (logical_not makes a new tensor). Written whole, its forward leaves
dropout out."""
# expect: modifies-input
# also: no-dropout-in-training


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)

        def split_heads(t):
            return t.view(batch, -1, self.n_heads, self.d_k).transpose(1, 2)

        q, k, v = split_heads(self.w_q(query)), split_heads(self.w_k(key)), split_heads(self.w_v(value))
        scores = q @ k.transpose(-2, -1) / self.d_k**0.5  # (batch, n_heads, q_len, k_len)
        if mask is not None:
            blocked = mask.logical_not_()  # in place: the caller's mask is now inverted
            scores = scores.masked_fill(blocked, float("-inf"))
        self.attn_weights = torch.softmax(scores, dim=-1)
        out = self.attn_weights @ v
        return self.w_o(out.transpose(1, 2).contiguous().view(batch, -1, self.d_model))
