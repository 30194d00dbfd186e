"""Planted mistake: the keys projected from `value` and the values from `key` (the two arguments swapped)."""
# expect: keys-values-swapped


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        return super().forward(query, value, key, mask)  # k = w_k(value), v = w_v(key)
