"""Ties by handing the target side the source's whole nn.Embedding module, then points the generator at its weight; Xavier runs once over the de-duplicated parameters."""

import torch  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)
from torch import nn

# Your own pieces from katas 9.6, 9.7 and 9.8 when you run this file; the reference solutions of those
# katas when it is graded, so that a mistake made there costs points there only.
from kata.earlier.decoder_block import Decoder, causal_mask  # kata 9.7
from kata.earlier.encoder_block import Encoder  # kata 9.6
from kata.earlier.positional_encoding import PositionalEncoding, TokenEmbedding  # kata 9.8


def padding_mask(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """True where the token is real, shaped (batch, 1, 1, len)."""
    real = tokens != pad_id
    return real.unsqueeze(1).unsqueeze(1)


def target_mask(tgt: torch.Tensor, pad_id: int | None = None) -> torch.Tensor:
    """Causal mask, and (if there is padding) the padded keys hidden too."""
    future_blocked = causal_mask(tgt.shape[-1], device=tgt.device)
    if pad_id is None:
        return future_blocked
    # (T, T) & (batch, 1, 1, T) -> (batch, 1, T, T)
    return torch.logical_and(future_blocked, padding_mask(tgt, pad_id))


class Transformer(nn.Module):
    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int = 512, n_heads: int = 8,
                 n_layers: int = 6, d_ff: int = 2048, dropout: float = 0.1, max_len: int = 5000,
                 norm_first: bool = False, tie_embeddings: bool = False):
        super().__init__()
        if tie_embeddings and src_vocab_size != tgt_vocab_size:
            raise ValueError(
                f"cannot tie embeddings of different vocabularies ({src_vocab_size} vs {tgt_vocab_size})"
            )
        self.src_embed = TokenEmbedding(src_vocab_size, d_model)
        self.tgt_embed = TokenEmbedding(tgt_vocab_size, d_model)
        self.pos_encoding = PositionalEncoding(d_model, max_len=max_len, dropout=dropout)
        self.encoder = Encoder(n_layers, d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first)
        self.decoder = Decoder(n_layers, d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first)
        self.generator = nn.Linear(d_model, tgt_vocab_size, bias=not tie_embeddings)

        if tie_embeddings:
            # one nn.Embedding on both sides -> one weight; the generator reuses that same Parameter
            self.tgt_embed.embedding = self.src_embed.embedding
            self.generator.weight = self.src_embed.embedding.weight

        # parameters() yields a shared Parameter only once, so the tied matrix is drawn once
        for param in self.parameters():
            if param.dim() >= 2:
                nn.init.xavier_uniform_(param)

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        x = self.src_embed(src)
        x = self.pos_encoding(x)
        return self.encoder(x, src_mask)

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None = None,
               tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        y = self.tgt_embed(tgt)
        y = self.pos_encoding(y)
        return self.decoder(y, memory, src_mask, tgt_mask)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, src_mask: torch.Tensor | None = None,
                tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        memory = self.encode(src, src_mask)
        hidden = self.decode(tgt, memory, src_mask=src_mask, tgt_mask=tgt_mask)
        return self.generator(hidden)
