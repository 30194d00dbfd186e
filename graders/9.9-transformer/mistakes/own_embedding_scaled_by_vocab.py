"""Planted mistake: the student's own TokenEmbedding (from kata 9.8) scales by sqrt(vocab_size), not sqrt(d_model)."""
# expect: fault-in-embedding


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)

    def forward(self, tokens):
        return self.embedding(tokens) * self.embedding.num_embeddings ** 0.5
