"""Alternative: reshape and permute instead of view and transpose; F.dropout with training=self.training."""
import torch.nn.functional as F


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        b = query.shape[0]
        q = self.w_q(query).reshape(b, query.shape[1], self.n_heads, self.d_k).permute(0, 2, 1, 3)
        k = self.w_k(key).reshape(b, key.shape[1], self.n_heads, self.d_k).permute(0, 2, 1, 3)
        v = self.w_v(value).reshape(b, value.shape[1], self.n_heads, self.d_k).permute(0, 2, 1, 3)
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        self.attn_weights = weights
        if self.training and self.dropout.p > 0:
            out = F.dropout(weights, self.dropout.p, training=self.training) @ v
        return self.w_o(out.permute(0, 2, 1, 3).reshape(b, query.shape[1], self.d_model))
