"""The numbers behind `kata viz`'s pictures: the student's (or the reference's) modules in, tensors out.

Nothing here reads the course or draws: every function takes a module, a class or a function of a kata
and returns plain tensors, so each picture's numbers can be tested without matplotlib. Only the names
the katas' contracts fix are used (`attn_weights`, `self_attn`, `ffn`, `norm_1`, `norm_2`, `layers`,
`decoder`, `cross_attn`, ...). Everything is seeded: the same code always gives the same picture.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import torch
from torch import nn

from kata import copy_task

SENTENCE = "the cat sat on the mat because it was tired"
SEED = 0


def sentence(d_model: int, seed: int = SEED) -> tuple[list[str], torch.Tensor]:
    """The words of SENTENCE and x (1, n_words, d_model): one fixed random vector per distinct word.

    Entries are N(0, 1), the size the scaled embeddings of kata 9.8 have, as an untrained embedding table
    would give; there are no positions, so the two "the"s are the same vector."""
    words = SENTENCE.split()
    vocab = sorted(set(words))
    table = torch.randn(len(vocab), d_model, generator=torch.Generator().manual_seed(seed))  # (vocab, d_model)
    return words, table[[vocab.index(w) for w in words]].unsqueeze(0)  # (1, n_words, d_model)


def causal(n: int) -> torch.Tensor:
    """(n, n) bool, True on and below the diagonal: query t may attend to keys 0..t (kata 9.7's mask)."""
    return torch.ones(n, n, dtype=torch.bool).tril()


def kept_weights(module: nn.Module, shape: tuple[int, ...], who: str) -> torch.Tensor:
    """module.attn_weights after a forward, checked against the shape its kata's contract promises."""
    weights = getattr(module, "attn_weights", None)
    if not isinstance(weights, torch.Tensor) or tuple(weights.shape) != shape:
        got = tuple(weights.shape) if isinstance(weights, torch.Tensor) else repr(weights)
        raise ValueError(f"{who}.attn_weights should hold the last forward's weights, shape {shape}; got {got}")
    return weights.detach()


def head_weights(head: nn.Module, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """(n, n) self-attention weights of an AttentionHead (kata 9.3) on x (1, n, d_model); rows are queries."""
    n = x.size(1)
    with torch.no_grad():
        head(x, mask=mask)
    return kept_weights(head, (1, n, n), "AttentionHead")[0]  # (n, n)


def multi_head_weights(mha: nn.Module, x: torch.Tensor, n_heads: int,
                       mask: torch.Tensor | None = None) -> torch.Tensor:
    """(n_heads, n, n) self-attention weights of a MultiHeadAttention (kata 9.4) on x (1, n, d_model)."""
    n = x.size(1)
    with torch.no_grad():
        mha(x, x, x, mask)
    return kept_weights(mha, (1, n_heads, n, n), "MultiHeadAttention")[0]  # (n_heads, n, n)


def with_positions(x: torch.Tensor, n_features: int) -> torch.Tensor:
    """x (1, n, d_model) with its last n_features features replaced by the sinusoidal encoding of each
    word's position (n_features / 2 sin, cos pairs, angle pos / 10000^(2i / n_features), as kata 9.8's)."""
    n, d_model = x.size(1), x.size(2)
    pos = torch.arange(n, dtype=torch.float64)[:, None]  # (n, 1)
    rate = 10000.0 ** (-torch.arange(0, n_features, 2, dtype=torch.float64) / n_features)  # (n_features / 2,)
    pe = torch.stack([torch.sin(pos * rate), torch.cos(pos * rate)], dim=-1).reshape(n, n_features)  # (n, n_f)
    out = x.clone()
    out[0, :, d_model - n_features:] = pe.to(x.dtype)
    return out


def set_previous_word_head(mha: nn.Module, d_model: int, d_k: int, sharpness: float = 10.0) -> None:
    """Hand-set head 1 of a MultiHeadAttention (kata 9.4's w_q, w_k: head 1 owns output features 0..d_k-1)
    to attend from each word to the word before it, reading positions from the last d_k input features
    (`with_positions`). Its key is a word's encoding, PE(s); its query is the encoding of the position
    before it, PE(t - 1): each sin/cos pair of PE(t) turned back by one step,

        [sin w(t-1), cos w(t-1)] = [[cos w, -sin w], [sin w, cos w]] @ [sin wt, cos wt],

    so q_t . k_s = sum_i cos(w_i (t - 1 - s)) * scale, largest at s = t - 1 (kata 9.8's offset picture).
    `sharpness` sets how much larger, after the 1/sqrt(d_k) of attention. Every other weight of the head is 0."""
    rate = 10000.0 ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)  # (d_k / 2,)
    turn = torch.zeros(d_k, d_k, dtype=torch.float64)
    for i, w in enumerate(rate.tolist()):
        c, s = torch.cos(torch.tensor(w)), torch.sin(torch.tensor(w))
        turn[2 * i:2 * i + 2, 2 * i:2 * i + 2] = torch.tensor([[c, -s], [s, c]])
    with torch.no_grad():
        for linear, block in ((mha.w_q, turn * sharpness * d_k ** 0.5), (mha.w_k, torch.eye(d_k))):
            linear.weight[:d_k] = 0.0
            linear.weight[:d_k, d_model - d_k:] = block.to(linear.weight.dtype)
            if linear.bias is not None:
                linear.bias[:d_k] = 0.0


def through_blocks(blocks: Sequence[nn.Module], x: torch.Tensor, *, residual: bool, norm_first: bool) -> torch.Tensor:
    """x and every encoder block's output, stacked: (len(blocks) + 1, n, d_model) for x (1, n, d_model).

    residual=True runs each block as written. residual=False runs the same sub-layers with the same weights
    (`self_attn`, `ffn`, `norm_1`, `norm_2`: kata 9.6's contract) without the two `x + ...` sums:

        post-norm: x = norm_1(self_attn(x, x, x));   x = norm_2(ffn(x))
        pre-norm:  x = self_attn(h, h, h), h = norm_1(x);   x = ffn(norm_2(x))
    """
    outputs = [x[0]]
    with torch.no_grad():
        for block in blocks:
            if residual:
                x = block(x)
            elif norm_first:
                h = block.norm_1(x)
                x = block.ffn(block.norm_2(block.self_attn(h, h, h)))
            else:
                x = block.norm_2(block.ffn(block.norm_1(block.self_attn(x, x, x))))
            outputs.append(x[0])
    return torch.stack(outputs)  # (n_blocks + 1, n, d_model)


def cosine_similarity(h: torch.Tensor) -> torch.Tensor:
    """(..., n, n) cosine similarity between the n token vectors of h (..., n, d_model)."""
    unit = h / h.norm(dim=-1, keepdim=True).clamp_min(1e-30)  # (..., n, d_model)
    return unit @ unit.transpose(-2, -1)  # (..., n, n)


def token_norm(h: torch.Tensor) -> torch.Tensor:
    """(...,) the mean over the n tokens of ||h_t||, for h (..., n, d_model)."""
    return h.norm(dim=-1).mean(dim=-1)


def token_spread(h: torch.Tensor) -> torch.Tensor:
    """(...,) the mean over the n tokens of ||h_t - mean_s h_s||: the part of the signal that tells the
    tokens apart. It is 0 when every token holds the same vector."""
    return (h - h.mean(dim=-2, keepdim=True)).norm(dim=-1).mean(dim=-1)


def offset_dot_products(pe: torch.Tensor, positions: Sequence[int], offsets: Sequence[int]) -> torch.Tensor:
    """(len(positions), len(offsets)): PE[p] . PE[p + k] for each position p and offset k, pe (max_len, d_model).

    For the sinusoidal table it is sum_i cos(w_i k), the same for every p: a function of the offset alone."""
    p = torch.tensor(positions)[:, None]  # (positions, 1)
    k = torch.tensor(offsets)[None, :]  # (1, offsets)
    return (pe[p] * pe[p + k]).sum(dim=-1)  # (positions, offsets)


def noam_curve(noam_lr: Callable, steps: Sequence[int], d_model: int, warmup_steps: int,
               factor: float = 1.0) -> torch.Tensor:
    """(len(steps),) float64: noam_lr (kata 9.10) at each step."""
    return torch.tensor([float(noam_lr(s, d_model, warmup_steps, factor)) for s in steps], dtype=torch.float64)


@dataclasses.dataclass
class CopyRun:
    """A copy-task training run (kata.copy_task) and the learning rate each step used."""

    run: copy_task.CopyTaskRun
    lrs: list[float]  # the optimiser's learning rate at each step


WATCH_EVERY = 10  # the validation curve's points: every 10 steps (the run's own decisions: from 100, every 25)


def train_copy(pieces, seed: int = SEED) -> CopyRun:
    """The run `kata train-demo --seed <seed>` makes: the copy task (copy_task.TASK) trained with a kata 9.10
    module's pieces (its Transformer, padding_mask, make_optimizer, make_scheduler, train_step, greedy_decode),
    its validation accuracy also watched every WATCH_EVERY steps for the curve (which changes nothing)."""
    lrs: list[float] = []
    run = copy_task.train_copy_task(
        copy_task.TASK, Transformer=pieces.Transformer, padding_mask=pieces.padding_mask,
        make_optimizer=pieces.make_optimizer, make_scheduler=pieces.make_scheduler, train_step=pieces.train_step,
        greedy_decode=pieces.greedy_decode, seed=seed, on_step=lambda step, loss, lr, tokens: lrs.append(lr),
        watch_every=WATCH_EVERY)
    return CopyRun(run, lrs)


def copy_example(run: copy_task.CopyTaskRun) -> tuple[torch.Tensor, torch.Tensor]:
    """The first held-out example of the longest length: src (1, n) and the decoder's input (1, n + 1),
    [bos, s_1, ..., s_n], without padding."""
    src, tgt = run.heldout  # (n_heldout, max_len), (n_heldout, max_len + 2)
    lengths = (src != copy_task.PAD_ID).sum(dim=1)  # (n_heldout,)
    i = int((lengths == lengths.max()).nonzero()[0])
    n = int(lengths[i])
    return src[i:i + 1, :n], tgt[i:i + 1, :n + 1]


def copy_attention(model: nn.Module, padding_mask: Callable, src: torch.Tensor, tgt_in: torch.Tensor,
                   n_heads: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The last decoder block's attention on one teacher-forced example: (cross, self).

    cross (n_heads, tgt_len, src_len): row t is the decoder after reading tgt_in[:t + 1], looking at the
    source for the symbol it outputs next (source position t). self (n_heads, tgt_len, tgt_len)."""
    tgt_len, src_len = tgt_in.size(1), src.size(1)
    model.eval()
    with torch.no_grad():
        model(src, tgt_in, padding_mask(src, copy_task.PAD_ID), causal(tgt_len))
    block = model.decoder.layers[-1]
    cross = kept_weights(block.cross_attn, (1, n_heads, tgt_len, src_len), "decoder.layers[-1].cross_attn")
    masked = kept_weights(block.self_attn, (1, n_heads, tgt_len, tgt_len), "decoder.layers[-1].self_attn")
    return cross[0], masked[0]
