"""Alternative: the weights tied to the target embedding's matrix, the initialisation over named_parameters."""


class Transformer(Transformer):
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=512, n_heads=8, n_layers=6, d_ff=2048, dropout=0.1,
                 max_len=5000, norm_first=False, tie_embeddings=False):
        nn.Module.__init__(self)
        if tie_embeddings and src_vocab_size != tgt_vocab_size:
            raise ValueError("tied embeddings need src_vocab_size == tgt_vocab_size")
        self.d_model = d_model
        self.src_embed = TokenEmbedding(src_vocab_size, d_model)
        self.tgt_embed = TokenEmbedding(tgt_vocab_size, d_model)
        self.pos_encoding = PositionalEncoding(d_model, max_len, dropout)
        self.encoder = Encoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.decoder = Decoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.generator = nn.Linear(d_model, tgt_vocab_size, bias=not tie_embeddings)
        for _, weight in self.named_parameters():
            if weight.ndim >= 2:
                nn.init.xavier_uniform_(weight)
        if tie_embeddings:
            self.src_embed.embedding.weight = self.tgt_embed.embedding.weight
            self.generator.weight = self.tgt_embed.embedding.weight
