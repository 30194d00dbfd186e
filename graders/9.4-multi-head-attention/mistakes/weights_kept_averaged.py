"""Planted mistake: attn_weights keeps the heads' weights averaged, (batch, q_len, k_len), as
nn.MultiheadAttention returns them by default (average_attn_weights=True)."""
# expect: attn-weights-averaged-over-heads


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        out = super().forward(query, key, value, mask)
        self.attn_weights = self.attn_weights.mean(dim=1)
        return out
