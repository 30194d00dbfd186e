"""Planted mistake: the keys projected with w_v and the values with w_k. Where each query has one key to weigh,
only the values show it: their path is then localised (fault-in-values), which is true of it."""
# expect: key-value-projections-swapped
# also: fault-in-values


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        self.w_k, self.w_v = self.w_v, self.w_k  # as if each were the other
        try:
            return super().forward(query, key, value, mask)
        finally:
            self.w_k, self.w_v = self.w_v, self.w_k
