"""Alternative: the query, key and value projections are also kept in an nn.ModuleList and applied in a loop, so
each is held under a second name (`qkv.1.bias` is `w_k.bias`): the same parameters, loaded once."""


class MultiHeadAttention(MultiHeadAttention):
    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__(d_model, n_heads, dropout)
        self.qkv = nn.ModuleList([self.w_q, self.w_k, self.w_v])

    def forward(self, query, key, value, mask=None):
        batch = query.size(0)
        q, k, v = (
            projection(source).view(batch, -1, self.n_heads, self.d_k).transpose(1, 2)  # (batch, h, len, d_k)
            for projection, source in zip(self.qkv, (query, key, value), strict=True)
        )
        out, self.attn_weights = scaled_dot_product_attention(q, k, v, mask)
        if self.training and self.dropout.p > 0:
            out = self.dropout(self.attn_weights) @ v
        return self.w_o(out.transpose(1, 2).contiguous().view(batch, -1, self.d_model))
