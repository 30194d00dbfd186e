"""Planted mistake: the head computes its attention itself and scales the scores by sqrt(d_model)."""
# expect: scaled-by-sqrt-d-model


class AttentionHead(AttentionHead):
    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q, k, v = self.w_q(x), self.w_k(context), self.w_v(context)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_model)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = softmax(scores, dim=-1)
        if mask is not None:
            weights = weights.masked_fill(~mask, 0.0)
        self.attn_weights = weights
        return weights @ v
