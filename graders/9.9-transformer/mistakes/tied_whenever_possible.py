"""Planted mistake: the embeddings are tied whenever the vocabularies match, asked or not."""
# expect: tied-when-not-asked


class Transformer(Transformer):
    def __init__(self, src_vocab_size, tgt_vocab_size, *args, tie_embeddings=False, **kwargs):
        super().__init__(src_vocab_size, tgt_vocab_size, *args, tie_embeddings=tie_embeddings, **kwargs)
        if src_vocab_size == tgt_vocab_size:
            self.tgt_embed.embedding.weight = self.src_embed.embedding.weight
            self.generator.weight = self.src_embed.embedding.weight
