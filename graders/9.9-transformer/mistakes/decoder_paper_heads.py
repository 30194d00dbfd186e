"""Planted mistake: the decoder is built with the paper's 8 heads, whatever n_heads is."""
# expect: fault-in-decoder


class Transformer(Transformer):
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=512, n_heads=8, n_layers=6, d_ff=2048, dropout=0.1,
                 max_len=5000, norm_first=False, tie_embeddings=False):
        super().__init__(src_vocab_size, tgt_vocab_size, d_model, n_heads, n_layers, d_ff, dropout, max_len,
                         norm_first, tie_embeddings)
        self.decoder = Decoder(n_layers, d_model, 8, d_ff, dropout, norm_first)  # 8 heads, as in the paper
        for p in self.decoder.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
