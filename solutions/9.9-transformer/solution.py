"""Kata 9.9: the full encoder-decoder Transformer.

Everything built so far, wired together as in figure 1 of the paper (Vaswani et al., 2017):

    src (batch, src_len) token ids
      -> src_embed      (batch, src_len, d_model)   embedding * sqrt(d_model)             kata 9.8
      -> pos_encoding   (batch, src_len, d_model)   + PE[:src_len], dropout                kata 9.8
      -> encoder        (batch, src_len, d_model)   N blocks, src_mask on self-attention   kata 9.6
      =  memory
    tgt (batch, tgt_len) token ids (the target shifted right: <bos> y_1 ... y_{n-1})
      -> tgt_embed      (batch, tgt_len, d_model)
      -> pos_encoding   (batch, tgt_len, d_model)
      -> decoder        (batch, tgt_len, d_model)   N blocks: tgt_mask on self-attention,  kata 9.7
                                                     src_mask on cross-attention to memory
      -> generator      (batch, tgt_len, tgt_vocab) a linear map to one logit per word

The logits are NOT passed through a softmax here: the loss (kata 9.10) takes logits, and the
softmax over the vocabulary happens inside it (log-softmax + NLL is more stable than log(softmax)).

Masks (bool, True = may attend):
- Sequences in a batch have different lengths and are padded to the longest with a `pad_id` token.
  Padding must be invisible: no real token may attend to it. `padding_mask(tokens, pad_id)` is
  True at real tokens, shaped (batch, 1, 1, len) so that it broadcasts over heads and queries.
- src_mask = padding_mask(src, pad_id), (batch, 1, 1, src_len): used by the encoder's self-attention
  AND by every decoder block's cross-attention (the keys there are the source positions).
- tgt_mask: the decoder's self-attention mask, formed by the CALLER and passed in complete; the model
  does not add anything to it. For training it is the causal mask AND the target's padding mask,
  `target_mask(tgt, pad_id)`, (batch, 1, tgt_len, tgt_len); for decoding without padding,
  causal_mask(tgt_len), (tgt_len, tgt_len). tgt_mask=None means no mask at all (every target
  position sees every other): never what you want for training a decoder.
Padded QUERY positions still compute something (they attend to the real tokens); their outputs are
simply ignored by the loss.

Weight tying (section 3.4, after Press & Wolf, 2017): with tie_embeddings=True ONE matrix E of shape
(vocab, d_model) is the source embedding, the target embedding and the generator's weight
(logits = h E^T, no bias). Source and target then share one vocabulary (the paper uses a shared
byte-pair vocabulary of about 37000 tokens), and the model saves 2 * vocab * d_model parameters.
Press & Wolf found that the output embedding is a good word embedding and that tying it to the input
one helps perplexity. The base model has then exactly 63,082,496 parameters (the paper's "65M"):
12 blocks (44,138,496) + one 37,000 x 512 matrix (18,944,000).

Initialisation: every matrix (every parameter with 2 or more dimensions: the projections, the
feed-forward layers, the embeddings) is drawn from Xavier/Glorot uniform, U(-a, a) with
a = sqrt(6 / (fan_in + fan_out)), as in the Annotated Transformer; biases keep nn.Linear's default,
the norms gamma = 1 and beta = 0. Xavier keeps the variance of activations and gradients roughly
constant through the linear layers, and it makes the (shared) embedding small, entries of size about
1 / sqrt(d_model), which the sqrt(d_model) scaling of kata 9.8 brings back to the size of the
positional encoding.

Public names (the kata's contract):
    padding_mask(tokens, pad_id) -> bool (batch, 1, 1, len), True at real tokens (tokens != pad_id).
    target_mask(tgt, pad_id=None) -> bool: causal_mask(tgt_len) & padding_mask(tgt, pad_id),
        (batch, 1, tgt_len, tgt_len); just the causal mask (tgt_len, tgt_len) when pad_id is None.
    Transformer(src_vocab_size, tgt_vocab_size, d_model=512, n_heads=8, n_layers=6, d_ff=2048,
        dropout=0.1, max_len=5000, norm_first=False, tie_embeddings=False) with sub-modules
        `src_embed`, `tgt_embed` (TokenEmbedding), `pos_encoding` (PositionalEncoding, one module
        for both sides), `encoder` (Encoder), `decoder` (Decoder), `generator` (nn.Linear(d_model,
        tgt_vocab_size), no bias when tied); ValueError when tie_embeddings and the vocabulary sizes
        differ.
        encode(src, src_mask=None) -> memory (batch, src_len, d_model)
        decode(tgt, memory, src_mask=None, tgt_mask=None) -> (batch, tgt_len, d_model)
        forward(src, tgt, src_mask=None, tgt_mask=None) -> logits (batch, tgt_len, tgt_vocab_size)
"""

import torch  # noqa: I001 (ruff cannot see that kata.earlier.* is first-party: its modules are virtual)
from torch import nn

# Your own pieces from katas 9.6, 9.7 and 9.8 when you run this file; the reference solutions of those
# katas when it is graded, so that a mistake made there costs points there only.
from kata.earlier.decoder_block import Decoder, causal_mask  # kata 9.7
from kata.earlier.encoder_block import Encoder  # kata 9.6
from kata.earlier.positional_encoding import PositionalEncoding, TokenEmbedding  # kata 9.8


def padding_mask(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Which tokens are real: True where tokens != pad_id.

    Args:
        tokens: (batch, len) integer token ids.
        pad_id: the id of the padding token.

    Returns:
        bool (batch, 1, 1, len), on tokens' device: it broadcasts against attention scores
        (batch, n_heads, q_len, len), hiding the padding KEYS from every head and every query.
    """
    ### BEGIN SOLUTION
    return (tokens != pad_id)[:, None, None, :]  # (batch, 1, 1, len)
    ### END SOLUTION


def target_mask(tgt: torch.Tensor, pad_id: int | None = None) -> torch.Tensor:
    """The decoder's self-attention mask: causal, and blind to the target's padding.

        mask[b, 0, i, j] = (j <= i) and tgt[b, j] != pad_id

    Args:
        tgt:    (batch, tgt_len) integer token ids (the decoder's input).
        pad_id: the padding id, or None when the target has no padding.

    Returns:
        bool (batch, 1, tgt_len, tgt_len), or (tgt_len, tgt_len) when pad_id is None; on tgt's device.
    """
    ### BEGIN SOLUTION
    causal = causal_mask(tgt.size(1), device=tgt.device)  # (tgt_len, tgt_len)
    if pad_id is None:
        return causal
    # (batch, 1, 1, tgt_len) & (tgt_len, tgt_len) -> (batch, 1, tgt_len, tgt_len)
    return padding_mask(tgt, pad_id) & causal
    ### END SOLUTION


class Transformer(nn.Module):
    """The encoder-decoder Transformer: token ids in, next-token logits out.

        memory = encoder(pos_encoding(src_embed(src)), src_mask)
        h      = decoder(pos_encoding(tgt_embed(tgt)), memory, src_mask, tgt_mask)
        logits = generator(h)

    Args:
        src_vocab_size, tgt_vocab_size: vocabulary sizes (equal when tie_embeddings).
        d_model, n_heads, n_layers, d_ff, dropout, norm_first: as for Encoder / Decoder (katas 9.6,
            9.7); n_layers blocks in EACH stack. The paper's base model is the default.
        max_len:        the longest sequence the positional encoding accepts.
        tie_embeddings: share one (vocab, d_model) matrix, the same nn.Parameter object, between
                        src_embed, tgt_embed and the generator, which then has no bias.

    Sub-modules (their names are part of the contract):
        src_embed, tgt_embed: TokenEmbedding(vocab, d_model)
        pos_encoding:         PositionalEncoding(d_model, max_len, dropout), used for both sides
        encoder:              Encoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        decoder:              Decoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        generator:            nn.Linear(d_model, tgt_vocab_size), bias=not tie_embeddings

    Initialisation: Xavier uniform for every parameter with 2 or more dimensions.

    Raises:
        ValueError: tie_embeddings with src_vocab_size != tgt_vocab_size (and whatever the pieces
            raise: d_model not divisible by n_heads, odd d_model).
    """

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int = 512, n_heads: int = 8,
                 n_layers: int = 6, d_ff: int = 2048, dropout: float = 0.1, max_len: int = 5000,
                 norm_first: bool = False, tie_embeddings: bool = False):
        super().__init__()
        ### BEGIN SOLUTION
        if tie_embeddings and src_vocab_size != tgt_vocab_size:
            raise ValueError("tie_embeddings needs one shared vocabulary, got src_vocab_size="
                             f"{src_vocab_size} and tgt_vocab_size={tgt_vocab_size}")
        self.d_model = d_model
        self.src_embed = TokenEmbedding(src_vocab_size, d_model)
        self.tgt_embed = TokenEmbedding(tgt_vocab_size, d_model)
        self.pos_encoding = PositionalEncoding(d_model, max_len, dropout)
        self.encoder = Encoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.decoder = Decoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.generator = nn.Linear(d_model, tgt_vocab_size, bias=not tie_embeddings)

        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        if tie_embeddings:
            # One Parameter object in three places: the same storage, one gradient (the sum of the
            # three uses), counted once by parameters() and by an optimiser. The generator's weight
            # (tgt_vocab, d_model) has the embedding's shape already: logits = h @ E^T.
            shared = self.src_embed.embedding.weight  # (vocab, d_model)
            self.tgt_embed.embedding.weight = shared
            self.generator.weight = shared
        ### END SOLUTION

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        """src (batch, src_len) ids -> memory (batch, src_len, d_model).

        src_mask: None or bool broadcastable to (batch, n_heads, src_len, src_len), usually
        padding_mask(src, pad_id) (batch, 1, 1, src_len).
        """
        ### BEGIN SOLUTION
        x = self.pos_encoding(self.src_embed(src))  # (batch, src_len, d_model)
        return self.encoder(x, src_mask)  # (batch, src_len, d_model)
        ### END SOLUTION

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None = None,
               tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        """tgt (batch, tgt_len) ids and memory (batch, src_len, d_model) -> (batch, tgt_len, d_model).

        src_mask: the source padding mask (batch, 1, 1, src_len), for cross-attention.
        tgt_mask: the complete self-attention mask, e.g. target_mask(tgt, pad_id); used as given.
        """
        ### BEGIN SOLUTION
        x = self.pos_encoding(self.tgt_embed(tgt))  # (batch, tgt_len, d_model)
        return self.decoder(x, memory, src_mask, tgt_mask)  # (batch, tgt_len, d_model)
        ### END SOLUTION

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, src_mask: torch.Tensor | None = None,
                tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (batch, tgt_len, tgt_vocab_size) for the token after each target position.

        Args:
            src:      (batch, src_len) source ids.
            tgt:      (batch, tgt_len) target ids, shifted right (the decoder's input).
            src_mask: None or the source padding mask (batch, 1, 1, src_len).
            tgt_mask: None or the complete decoder self-attention mask, e.g. target_mask(tgt, pad_id)
                      (batch, 1, tgt_len, tgt_len) or causal_mask(tgt_len).
        """
        ### BEGIN SOLUTION
        memory = self.encode(src, src_mask)  # (batch, src_len, d_model)
        h = self.decode(tgt, memory, src_mask, tgt_mask)  # (batch, tgt_len, d_model)
        return self.generator(h)  # (batch, tgt_len, tgt_vocab_size)
        ### END SOLUTION
