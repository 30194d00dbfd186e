"""Alternative: the three input projections applied at once for self-attention, from their stacked weights."""
import torch.nn.functional as F


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        if query is key and key is value:  # self-attention: one matrix product for q, k and v
            weight = torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight])
            bias = torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias])
            q, k, v = F.linear(query, weight, bias).chunk(3, dim=-1)
        else:
            q, k, v = self.w_q(query), self.w_k(key), self.w_v(value)
        batch = query.size(0)
        q, k, v = (t.view(batch, -1, self.n_heads, self.d_k).transpose(1, 2) for t in (q, k, v))
        out, self.attn_weights = scaled_dot_product_attention(q, k, v, mask)
        if self.training and self.dropout.p > 0:
            out = self.dropout(self.attn_weights) @ v
        return self.w_o(out.transpose(1, 2).reshape(batch, -1, self.d_model))
