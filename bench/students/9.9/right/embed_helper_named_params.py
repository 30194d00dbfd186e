"""Builds the target mask from an explicit padding-key comparison expanded to (batch, 1, T, T), embeds through one helper, and Xavier-initialises by name before tying."""

import torch  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)
from torch import nn

# Your own pieces from katas 9.6, 9.7 and 9.8 when you run this file; the reference solutions of those
# katas when it is graded, so that a mistake made there costs points there only.
from kata.earlier.decoder_block import Decoder, causal_mask  # kata 9.7
from kata.earlier.encoder_block import Encoder  # kata 9.6
from kata.earlier.positional_encoding import PositionalEncoding, TokenEmbedding  # kata 9.8


def padding_mask(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    batch, length = tokens.shape
    return (tokens != pad_id).view(batch, 1, 1, length)


def target_mask(tgt: torch.Tensor, pad_id: int | None = None) -> torch.Tensor:
    batch, length = tgt.shape
    lower = causal_mask(length, device=tgt.device)  # (T, T): key j visible from query i iff j <= i
    if pad_id is None:
        return lower
    key_is_real = padding_mask(tgt, pad_id).expand(batch, 1, length, length)
    return key_is_real & lower.view(1, 1, length, length)


class Transformer(nn.Module):
    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int = 512, n_heads: int = 8,
                 n_layers: int = 6, d_ff: int = 2048, dropout: float = 0.1, max_len: int = 5000,
                 norm_first: bool = False, tie_embeddings: bool = False):
        super().__init__()
        if tie_embeddings and src_vocab_size != tgt_vocab_size:
            raise ValueError("weight tying needs one shared vocabulary: src_vocab_size must equal tgt_vocab_size")

        self.src_embed = TokenEmbedding(src_vocab_size, d_model)
        self.tgt_embed = TokenEmbedding(tgt_vocab_size, d_model)
        self.pos_encoding = PositionalEncoding(d_model, max_len, dropout)
        self.encoder = Encoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.decoder = Decoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.generator = nn.Linear(d_model, tgt_vocab_size, bias=not tie_embeddings)

        for _name, weight in self.named_parameters():
            if weight.ndim < 2:
                continue  # biases and norm parameters keep their defaults
            nn.init.xavier_uniform_(weight)

        if tie_embeddings:
            shared = self.tgt_embed.embedding.weight
            self.src_embed.embedding.weight = shared
            self.generator.weight = shared

    def _embed(self, tokens: torch.Tensor, embedding: TokenEmbedding) -> torch.Tensor:
        return self.pos_encoding(embedding(tokens))

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.encoder(self._embed(src, self.src_embed), mask=src_mask)

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None = None,
               tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.decoder(self._embed(tgt, self.tgt_embed), memory, src_mask=src_mask, tgt_mask=tgt_mask)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, src_mask: torch.Tensor | None = None,
                tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        out = self.decode(tgt, self.encode(src, src_mask), src_mask, tgt_mask)
        return self.generator(out)
