"""Alternative: k scaled by 1/sqrt(d_k) instead of the scores, blocked scores -inf through torch.where, detached
weights kept, dropout through the module's nn.Dropout, the heads merged with permute and flatten."""
import math


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        q = self.w_q(query).unflatten(-1, (self.n_heads, self.d_k)).permute(0, 2, 1, 3)
        k = self.w_k(key).unflatten(-1, (self.n_heads, self.d_k)).permute(0, 2, 1, 3) / math.sqrt(self.d_k)
        v = self.w_v(value).unflatten(-1, (self.n_heads, self.d_k)).permute(0, 2, 1, 3)
        scores = torch.matmul(q, k.transpose(2, 3))
        if mask is not None:
            scores = torch.where(mask, scores, -torch.inf)
        weights = torch.softmax(scores, dim=3)
        self.attn_weights = weights.detach()
        out = torch.matmul(self.dropout(weights), v)
        return self.w_o(out.permute(0, 2, 1, 3).flatten(start_dim=2))
