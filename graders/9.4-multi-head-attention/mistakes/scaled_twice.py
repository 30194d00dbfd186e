"""Planted mistake: q and k each divided by sqrt(d_k), so the scores are divided by d_k."""
# expect: scaled-twice
import math


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)
        q = self.w_q(query).view(batch, -1, self.n_heads, self.d_k).transpose(1, 2) / math.sqrt(self.d_k)
        k = self.w_k(key).view(batch, -1, self.n_heads, self.d_k).transpose(1, 2) / math.sqrt(self.d_k)
        v = self.w_v(value).view(batch, -1, self.n_heads, self.d_k).transpose(1, 2)
        scores = q @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        self.attn_weights = torch.softmax(scores, dim=-1)
        out = self.dropout(self.attn_weights) @ v
        return self.w_o(out.transpose(1, 2).reshape(batch, -1, self.d_model))
