"""Planted mistake: the embedding built with padding_idx=0, so token 0's row is never learned."""
# expect: padding-idx-set


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=0)

    def forward(self, tokens):
        return self.embedding(tokens) * math.sqrt(self.d_model)
