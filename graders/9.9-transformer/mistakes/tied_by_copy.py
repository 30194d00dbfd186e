"""Planted mistake: "tying" by copying the values: three equal matrices that train apart."""
# expect: tied-by-copy
# also: generator-not-tied


class Transformer(Transformer):
    def __init__(self, src_vocab_size, tgt_vocab_size, *args, tie_embeddings=False, **kwargs):
        super().__init__(src_vocab_size, tgt_vocab_size, *args, tie_embeddings=tie_embeddings, **kwargs)
        if tie_embeddings:
            shared = self.src_embed.embedding.weight
            self.tgt_embed.embedding.weight = nn.Parameter(shared.detach().clone())
            self.generator.weight = nn.Parameter(shared.detach().clone())
