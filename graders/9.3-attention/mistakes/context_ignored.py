"""Planted mistake: the head takes keys and values from x even when a context is given."""
# expect: context-ignored


class AttentionHead(AttentionHead):
    def forward(self, x, context=None, mask=None):
        out, self.attn_weights = scaled_dot_product_attention(self.w_q(x), self.w_k(x), self.w_v(x), mask)
        return out
