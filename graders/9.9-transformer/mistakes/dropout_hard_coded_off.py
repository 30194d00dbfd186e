"""Planted mistake: dropout=0.0 hard-coded in every piece (left over from debugging for reproducibility)."""
# expect: dropout-missing
# also: dropout-not-passed-on


class Transformer(Transformer):
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=512, n_heads=8, n_layers=6, d_ff=2048,
                 dropout=0.1, max_len=5000, norm_first=False, tie_embeddings=False):
        super().__init__(src_vocab_size, tgt_vocab_size, d_model, n_heads, n_layers, d_ff, 0.0, max_len,
                         norm_first, tie_embeddings)
