"""Planted mistake: untied, the target embedding is a new Parameter over the source embedding's storage."""
# expect: tied-when-not-asked


class Transformer(Transformer):
    def __init__(self, src_vocab_size, tgt_vocab_size, *args, tie_embeddings=False, **kwargs):
        super().__init__(src_vocab_size, tgt_vocab_size, *args, tie_embeddings=tie_embeddings, **kwargs)
        if src_vocab_size == tgt_vocab_size and not tie_embeddings:
            self.tgt_embed.embedding.weight = nn.Parameter(self.src_embed.embedding.weight.data)
