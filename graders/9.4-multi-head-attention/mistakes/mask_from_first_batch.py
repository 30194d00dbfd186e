"""Planted mistake: a (batch, 1, 1, k_len) padding mask is cut to batch element 0's, for every element."""
# expect: mask-from-first-batch


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        if mask is not None and mask.dim() == 4:
            mask = mask[0]  # (1, 1, k_len): "the same for every sequence"
        return super().forward(query, key, value, mask)
