"""Planted mistake: in cross-attention the keys come from context but the values from x."""
# expect: fault-in-projection-input


class AttentionHead(AttentionHead):
    def forward(self, x, context=None, mask=None):
        source = x if context is None else context
        out, self.attn_weights = scaled_dot_product_attention(self.w_q(x), self.w_k(source), self.w_v(x), mask)
        return out
