"""Planted mistake: the generator keeps its bias when the embeddings are tied."""
# expect: generator-bias-when-tied


class Transformer(Transformer):
    def __init__(self, src_vocab_size, tgt_vocab_size, *args, tie_embeddings=False, **kwargs):
        super().__init__(src_vocab_size, tgt_vocab_size, *args, tie_embeddings=tie_embeddings, **kwargs)
        if tie_embeddings:
            shared = self.generator.weight
            self.generator = nn.Linear(shared.size(1), shared.size(0))
            self.generator.weight = shared
