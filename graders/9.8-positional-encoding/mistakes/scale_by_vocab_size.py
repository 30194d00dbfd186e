"""Planted mistake: the embedding scaled by the square root of the vocabulary size, not of d_model."""
# expect: fault-in-embedding-scale


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.vocab_size = vocab_size

    def forward(self, tokens):
        return self.embedding(tokens) * math.sqrt(self.vocab_size)
