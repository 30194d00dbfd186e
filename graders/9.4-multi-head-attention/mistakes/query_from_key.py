"""Planted mistake (localised): the queries projected from `key` (right in self-attention only)."""
# expect: fault-in-projection-inputs


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        return super().forward(key, key, value, mask) if query.shape == key.shape else super().forward(
            query, key, value, mask)
