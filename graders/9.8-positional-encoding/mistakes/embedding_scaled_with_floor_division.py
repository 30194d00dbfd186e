"""Planted mistake: the embedding scaled with // sqrt(d_model), floor division (no gradient, and floored)."""
# expect: floor-division-in-backward


class TokenEmbedding(TokenEmbedding):
    def forward(self, tokens):
        return self.embedding(tokens) // math.sqrt(self.d_model)
