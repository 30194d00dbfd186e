"""Alternative: a loop over the heads, each attending with its slice of the projections, then torch.cat."""


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        q, k, v = self.w_q(query), self.w_k(key), self.w_v(value)  # (batch, len, d_model)
        if mask is not None:
            mask = torch.broadcast_to(mask, (q.size(0), self.n_heads, q.size(1), k.size(1)))
        outputs, all_weights = [], []
        for h in range(self.n_heads):
            cols = slice(h * self.d_k, (h + 1) * self.d_k)
            head_mask = None if mask is None else mask[:, h]
            out, weights = scaled_dot_product_attention(q[..., cols], k[..., cols], v[..., cols], head_mask)
            if self.training and self.dropout.p > 0:
                out = self.dropout(weights) @ v[..., cols]
            outputs.append(out)
            all_weights.append(weights)
        self.attn_weights = torch.stack(all_weights, dim=1)  # (batch, n_heads, q_len, k_len)
        return self.w_o(torch.cat(outputs, dim=-1))
