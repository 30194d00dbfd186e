"""Planted mistake: the embeddings are tied unless told otherwise (the contract's default is tie_embeddings=False:
three matrices, and a generator with a bias)."""
# expect: wrong-default


class Transformer(Transformer):
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=512, n_heads=8, n_layers=6, d_ff=2048, dropout=0.1,
                 max_len=5000, norm_first=False, tie_embeddings=True):
        super().__init__(src_vocab_size, tgt_vocab_size, d_model, n_heads, n_layers, d_ff, dropout, max_len,
                         norm_first, tie_embeddings)
