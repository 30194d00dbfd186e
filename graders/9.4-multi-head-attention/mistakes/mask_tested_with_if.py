"""Planted mistake: `if mask:` (meant: if a mask was given) before giving the mask a heads dimension."""
# expect: tensor-as-truth-value


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        if mask:
            mask = mask.unsqueeze(1) if mask.dim() == 3 else mask
        return super().forward(query, key, value, mask)
