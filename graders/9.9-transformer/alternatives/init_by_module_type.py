"""Alternative: the whole embedding module shared when tied, Xavier applied to the Linear and Embedding modules."""


class Transformer(Transformer):
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=512, n_heads=8, n_layers=6, d_ff=2048, dropout=0.1,
                 max_len=5000, norm_first=False, tie_embeddings=False):
        nn.Module.__init__(self)
        if tie_embeddings and src_vocab_size != tgt_vocab_size:
            raise ValueError(f"cannot tie {src_vocab_size} and {tgt_vocab_size} words")
        self.d_model = d_model
        self.src_embed = TokenEmbedding(src_vocab_size, d_model)
        self.tgt_embed = self.src_embed if tie_embeddings else TokenEmbedding(tgt_vocab_size, d_model)
        self.pos_encoding = PositionalEncoding(d_model, max_len, dropout)
        self.encoder = Encoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.decoder = Decoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.generator = nn.Linear(d_model, tgt_vocab_size, bias=not tie_embeddings)
        self.apply(self._xavier)
        if tie_embeddings:
            self.generator.weight = self.src_embed.embedding.weight

    @staticmethod
    def _xavier(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.xavier_uniform_(module.weight)
