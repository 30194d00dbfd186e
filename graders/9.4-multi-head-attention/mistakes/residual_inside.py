"""Planted mistake (localised): a residual added inside the attention, after w_o (the block's job, not this one's)."""
# expect: fault-in-output


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        return query + super().forward(query, key, value, mask)
