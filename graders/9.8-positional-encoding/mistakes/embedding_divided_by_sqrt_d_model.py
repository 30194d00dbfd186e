"""Planted mistake: the token embedding is divided by sqrt(d_model), as attention scores are."""
# expect: embedding-divided-by-sqrt-d-model


class TokenEmbedding(TokenEmbedding):
    def forward(self, tokens):
        return self.embedding(tokens) / math.sqrt(self.d_model)
