"""Planted mistake: the keys projected with w_v and the values with w_k."""
# expect: key-value-projections-swapped


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        self.w_k, self.w_v = self.w_v, self.w_k  # as if each were the other
        try:
            return super().forward(query, key, value, mask)
        finally:
            self.w_k, self.w_v = self.w_v, self.w_k
