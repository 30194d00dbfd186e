"""Planted mistake: the positional encoding built as PositionalEncoding(d_model, dropout=dropout), its max_len left
at 5000 whatever the Transformer is given."""
# expect: max-len-not-passed


class Transformer(Transformer):
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=512, n_heads=8, n_layers=6, d_ff=2048,
                 dropout=0.1, max_len=5000, norm_first=False, tie_embeddings=False):
        super().__init__(src_vocab_size, tgt_vocab_size, d_model, n_heads, n_layers, d_ff, dropout, max_len,
                         norm_first, tie_embeddings)
        self.pos_encoding = PositionalEncoding(d_model, dropout=dropout)
