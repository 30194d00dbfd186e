"""Planted mistake: the vocabularies are required to match whether or not the embeddings are tied (the
`tie_embeddings and` of the condition left out), so a translation model with two vocabularies raises."""
# expect: value-error-on-valid-input


class Transformer(Transformer):
    def __init__(self, src_vocab_size, tgt_vocab_size, *args, **kwargs):
        if src_vocab_size != tgt_vocab_size:
            raise ValueError("tie_embeddings needs one shared vocabulary")
        super().__init__(src_vocab_size, tgt_vocab_size, *args, **kwargs)
