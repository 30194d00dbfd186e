"""Planted mistake: attn_weights is set only in eval mode (kept for inspection, so "not needed while training"):
after a train-mode call it still holds an earlier call's weights."""
# expect: attn-weights-not-kept-in-training


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        kept = self.attn_weights
        out = super().forward(query, key, value, mask)
        if self.training:
            self.attn_weights = kept
        return out
