"""Planted mistake: tie_embeddings=True raises ValueError only for a target vocabulary larger than the source's
(`<` where any two different sizes are refused: `!=`)."""
# expect: tied-sizes-checked-one-way


class Transformer(Transformer):
    def __init__(self, src_vocab_size, tgt_vocab_size, *args, tie_embeddings=False, **kwargs):
        if tie_embeddings and src_vocab_size < tgt_vocab_size:
            raise ValueError("tie_embeddings needs one shared vocabulary")
        # Built with the target's size for both: the larger source vocabulary is cut to the target's.
        super().__init__(tgt_vocab_size if tie_embeddings else src_vocab_size, tgt_vocab_size, *args,
                         tie_embeddings=tie_embeddings, **kwargs)
