"""Alternative: the head also keeps its three projections in an nn.ModuleList and projects through it, so each
weight is held under a second name (`projections.0.weight` is `w_q.weight`): the same parameters."""


class AttentionHead(AttentionHead):
    def __init__(self, d_model, d_head):
        super().__init__(d_model, d_head)
        self.projections = nn.ModuleList([self.w_q, self.w_k, self.w_v])

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        sources = (x, context, context)
        q, k, v = (projection(source) for projection, source in zip(self.projections, sources, strict=True))
        out, self.attn_weights = scaled_dot_product_attention(q, k, v, mask)
        return out
