"""Planted mistake: attention written inline, the scores divided by sqrt(d_model) instead of sqrt(d_k)."""
# expect: scaled-by-sqrt-d-model
import math


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)
        q, k, v = (w(t).view(batch, -1, self.n_heads, self.d_k).transpose(1, 2)
                   for w, t in ((self.w_q, query), (self.w_k, key), (self.w_v, value)))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_model)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        self.attn_weights = torch.softmax(scores, dim=-1)
        out = self.dropout(self.attn_weights) @ v
        return self.w_o(out.transpose(1, 2).reshape(batch, -1, self.d_model))
