"""Planted mistake: attn_weights kept after dropout, not before."""
# expect: weights-after-dropout


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        out = super().forward(query, key, value, mask)
        if self.training:  # the reference's weights, then dropped where they are kept
            self.attn_weights = self.dropout(self.attn_weights)
        return out
