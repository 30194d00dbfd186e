"""Alternative: Xavier-uniform written out with uniform_, its bound sqrt(6 / (fan_in + fan_out)) computed by sympy."""

import sympy


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
        with torch.no_grad():
            for p in self.parameters():
                if p.dim() > 1:
                    fan_out, fan_in = p.shape[0], p[0].numel()
                    bound = float(sympy.sqrt(sympy.Rational(6, fan_in + fan_out)))
                    p.uniform_(-bound, bound)
        if tie_embeddings:
            self.tgt_embed.embedding.weight = self.src_embed.embedding.weight
            self.generator.weight = self.src_embed.embedding.weight
