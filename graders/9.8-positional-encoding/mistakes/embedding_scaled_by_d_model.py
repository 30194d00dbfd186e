"""Planted mistake: the token embedding is multiplied by d_model, not its square root."""
# expect: embedding-scaled-by-d-model


class TokenEmbedding(TokenEmbedding):
    def forward(self, tokens):
        return self.embedding(tokens) * self.d_model
