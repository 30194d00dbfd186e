"""Alternative: attention written inline, q scaled by d_k**-0.5 before the product, blocked scores -inf, F.dropout
with training=self.training, the heads merged with torch.cat(out.unbind(1))."""
import torch.nn.functional as F


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        batch = query.size(0)
        q = self.w_q(query).view(batch, -1, self.n_heads, self.d_k).transpose(1, 2) * self.d_k**-0.5
        k = self.w_k(key).view(batch, -1, self.n_heads, self.d_k).transpose(1, 2)
        v = self.w_v(value).view(batch, -1, self.n_heads, self.d_k).transpose(1, 2)
        scores = q @ k.transpose(-2, -1)  # already scaled through q
        if mask is not None:
            scores = scores.masked_fill(mask.logical_not(), float("-inf"))
        weights = scores.softmax(dim=-1)
        self.attn_weights = weights
        out = F.dropout(weights, self.dropout.p, training=self.training) @ v  # (batch, n_heads, q_len, d_k)
        return self.w_o(torch.cat(out.unbind(1), dim=-1))  # head 1's d_k features first
