"""Planted mistake: wrap nn.MultiheadAttention instead of writing the heads."""
# expect: forbidden


class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        torch_mha = nn.MultiheadAttention(self.d_model, self.n_heads, batch_first=True)
        out, self.attn_weights = torch_mha(query, key, value, attn_mask=None if mask is None else ~mask)
        return out
