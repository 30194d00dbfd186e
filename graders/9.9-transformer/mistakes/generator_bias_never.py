"""Planted mistake: the generator never has a bias, untied embeddings too."""
# expect: generator-bias-missing


class Transformer(Transformer):
    def __init__(self, src_vocab_size, tgt_vocab_size, *args, tie_embeddings=False, **kwargs):
        super().__init__(src_vocab_size, tgt_vocab_size, *args, tie_embeddings=tie_embeddings, **kwargs)
        self.generator.bias = None
