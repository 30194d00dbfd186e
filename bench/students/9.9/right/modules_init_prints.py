"""Initialises module by module (Linear and Embedding weights) and prints the parameter count."""

import torch  # noqa: I001
from torch import nn

from kata.earlier.decoder_block import Decoder, causal_mask  # kata 9.7
from kata.earlier.encoder_block import Encoder  # kata 9.6
from kata.earlier.positional_encoding import PositionalEncoding, TokenEmbedding  # kata 9.8


def padding_mask(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    real = tokens != pad_id  # (batch, len)
    return real.view(tokens.size(0), 1, 1, tokens.size(1))


def target_mask(tgt: torch.Tensor, pad_id: int | None = None) -> torch.Tensor:
    m = causal_mask(tgt.size(1), tgt.device)
    return m if pad_id is None else padding_mask(tgt, pad_id) & m


class Transformer(nn.Module):
    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int = 512, n_heads: int = 8,
                 n_layers: int = 6, d_ff: int = 2048, dropout: float = 0.1, max_len: int = 5000,
                 norm_first: bool = False, tie_embeddings: bool = False):
        super().__init__()
        if tie_embeddings and src_vocab_size != tgt_vocab_size:
            raise ValueError("vocab sizes differ")
        self.src_embed = TokenEmbedding(src_vocab_size, d_model)
        self.tgt_embed = TokenEmbedding(tgt_vocab_size, d_model)
        self.pos_encoding = PositionalEncoding(d_model, max_len, dropout)
        self.encoder = Encoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.decoder = Decoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.generator = nn.Linear(d_model, tgt_vocab_size, bias=not tie_embeddings)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.xavier_uniform_(module.weight)
        if tie_embeddings:
            self.tgt_embed.embedding.weight = self.src_embed.embedding.weight
            self.generator.weight = self.src_embed.embedding.weight
        print(f"Transformer: {sum(p.numel() for p in self.parameters()):,} parameters")

    def encode(self, src, src_mask=None):
        return self.encoder(self.pos_encoding(self.src_embed(src)), src_mask)

    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        return self.decoder(self.pos_encoding(self.tgt_embed(tgt)), memory, src_mask, tgt_mask)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        memory = self.encode(src, src_mask)
        out = self.decode(tgt, memory, src_mask, tgt_mask)
        return self.generator(out)
