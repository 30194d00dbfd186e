"""Planted mistake: a loop over the heads, the scale written as the paper's number, 1 / sqrt(64), not from d_k."""
# expect: scale-not-from-d-k
# also: fault-in-weights


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        q, k, v = self.w_q(query), self.w_k(key), self.w_v(value)
        outputs, weights = [], []
        for h in range(self.n_heads):
            cols = slice(h * self.d_k, (h + 1) * self.d_k)
            scores = q[..., cols] @ k[..., cols].transpose(-2, -1) / 8.0  # sqrt(d_k) with d_k = 64
            if mask is not None:
                scores = scores.masked_fill(~mask[..., 0, :, :] if mask.dim() == 4 else ~mask, float("-inf"))
            weights.append(torch.softmax(scores, dim=-1))
            outputs.append(self.dropout(weights[-1]) @ v[..., cols])
        self.attn_weights = torch.stack(weights, dim=1)
        return self.w_o(torch.cat(outputs, dim=-1))
