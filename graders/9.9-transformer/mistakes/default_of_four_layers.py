"""Planted mistake: the signature's n_layers defaults to 4 (a smaller config copied from elsewhere), not the
paper's 6; every check that passes n_layers still passes."""
# expect: wrong-default


class Transformer(Transformer):
    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int = 512, n_heads: int = 8,
                 n_layers: int = 4, d_ff: int = 2048, dropout: float = 0.1, max_len: int = 5000,
                 norm_first: bool = False, tie_embeddings: bool = False):
        super().__init__(src_vocab_size, tgt_vocab_size, d_model, n_heads, n_layers, d_ff, dropout, max_len,
                         norm_first, tie_embeddings)
