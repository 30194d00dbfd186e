"""Planted mistake: the scale rounded to a whole number with math.isqrt (3 for d_model 12, not 3.46)."""
# expect: embedding-scale-rounded


class TokenEmbedding(TokenEmbedding):
    def forward(self, tokens):
        return self.embedding(tokens) * math.isqrt(self.d_model)
