"""Planted mistake: the token embedding is not multiplied by sqrt(d_model)."""
# expect: embedding-not-scaled


class TokenEmbedding(TokenEmbedding):
    def forward(self, tokens):
        return self.embedding(tokens)
