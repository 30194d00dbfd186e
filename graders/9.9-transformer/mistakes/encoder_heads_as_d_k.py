"""Planted mistake: the encoder is given d_k = d_model // n_heads where it takes the number of heads."""
# expect: fault-in-encoder


class Transformer(Transformer):
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=512, n_heads=8, n_layers=6, d_ff=2048, dropout=0.1,
                 max_len=5000, norm_first=False, tie_embeddings=False):
        super().__init__(src_vocab_size, tgt_vocab_size, d_model, n_heads, n_layers, d_ff, dropout, max_len,
                         norm_first, tie_embeddings)
        d_k = d_model // n_heads
        self.encoder = Encoder(n_layers, d_model, d_k, d_ff, dropout, norm_first)
        for p in self.encoder.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
