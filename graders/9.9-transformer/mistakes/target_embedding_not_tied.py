"""Planted mistake: tie_embeddings ties the generator to the source embedding but forgets tgt_embed."""
# expect: tgt-embed-not-tied


class Transformer(Transformer):
    def __init__(self, src_vocab_size, tgt_vocab_size, *args, tie_embeddings=False, **kwargs):
        super().__init__(src_vocab_size, tgt_vocab_size, *args, tie_embeddings=tie_embeddings, **kwargs)
        if tie_embeddings:
            self.tgt_embed.embedding.weight = nn.Parameter(torch.empty_like(self.generator.weight))
            nn.init.xavier_uniform_(self.tgt_embed.embedding.weight)
