"""Ties the three weights to one new Parameter first, then Xavier-initialises every matrix (the shared one once)."""

import torch  # noqa: I001
from torch import nn

from kata.earlier.decoder_block import Decoder, causal_mask  # kata 9.7
from kata.earlier.encoder_block import Encoder  # kata 9.6
from kata.earlier.positional_encoding import PositionalEncoding, TokenEmbedding  # kata 9.8


def padding_mask(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    return tokens.ne(pad_id)[:, None, None, :]


def target_mask(tgt: torch.Tensor, pad_id: int | None = None) -> torch.Tensor:
    causal = causal_mask(tgt.shape[-1], device=tgt.device)
    if pad_id is None:
        return causal
    return causal.unsqueeze(0).unsqueeze(0) & padding_mask(tgt, pad_id)


class Transformer(nn.Module):
    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int = 512, n_heads: int = 8,
                 n_layers: int = 6, d_ff: int = 2048, dropout: float = 0.1, max_len: int = 5000,
                 norm_first: bool = False, tie_embeddings: bool = False):
        super().__init__()
        if tie_embeddings and src_vocab_size != tgt_vocab_size:
            raise ValueError(f"cannot tie {src_vocab_size} and {tgt_vocab_size}")
        self.src_embed = TokenEmbedding(src_vocab_size, d_model)
        self.tgt_embed = TokenEmbedding(tgt_vocab_size, d_model)
        self.pos_encoding = PositionalEncoding(d_model, max_len=max_len, dropout=dropout)
        self.encoder = Encoder(n_layers, d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first)
        self.decoder = Decoder(n_layers, d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first)
        self.generator = nn.Linear(d_model, tgt_vocab_size, bias=not tie_embeddings)
        if tie_embeddings:
            shared = nn.Parameter(torch.empty(src_vocab_size, d_model))
            self.src_embed.embedding.weight = shared
            self.tgt_embed.embedding.weight = shared
            self.generator.weight = shared
        for name, param in self.named_parameters():
            if param.ndim >= 2:
                nn.init.xavier_uniform_(param)

    def encode(self, src, src_mask=None):
        x = self.src_embed(src)
        x = self.pos_encoding(x)
        return self.encoder(x, mask=src_mask)

    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        y = self.pos_encoding(self.tgt_embed(tgt))
        return self.decoder(y, memory, src_mask=src_mask, tgt_mask=tgt_mask)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.generator(self.decode(tgt, self.encode(src, src_mask), src_mask, tgt_mask))
