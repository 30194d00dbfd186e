"""Kata 9.10: training the Transformer: warm-up, label smoothing, teacher forcing, greedy decoding.

Section 5 of the paper (Vaswani et al., 2017) trains the model with four ingredients, and this kata
builds each of them, then puts them to work on a task small enough to learn in seconds on a laptop.

1. Adam with a warm-up schedule (section 5.3). Adam with beta_1 = 0.9, beta_2 = 0.98, eps = 1e-9 and
   a learning rate that grows linearly for the first warmup_steps steps, then decays as 1/sqrt(step):

       lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)

   The two branches meet at step = warmup_steps, where the rate peaks at
   factor * (d_model * warmup_steps)^-0.5 (7.0e-4 for d_model = 512, warmup_steps = 4000). Why warm
   up? Adam divides each update by sqrt(v), its running average of squared gradients. In the first
   steps v has seen only a handful of gradients, so that estimate is noisy and the update can be
   far too large, and a post-norm Transformer's early gradients are large and badly scaled: a full
   learning rate from step 1 throws the weights into a region it never recovers from. Ramping the
   rate up while the statistics settle avoids that.

   PyTorch expresses schedules as a multiplier of the optimiser's base rate:
   `torch.optim.lr_scheduler.LambdaLR(optimizer, f)` sets lr = base_lr * f(step) after `step` calls of
   `scheduler.step()`, and it calls f(0) once when it is built. So the optimiser is built with a base
   rate of exactly 1.0 and f IS the Noam rate; step 0 is counted as step 1 (0^-0.5 is undefined),
   so the first two optimiser steps both use the rate of step 1.

2. Label smoothing (section 5.4, e_ls = 0.1; Szegedy et al., 2016). Instead of the one-hot target,
   the model is trained towards

       q = (1 - e) * one_hot(y) + e / K        (K = the number of classes, the vocabulary)

   and the loss is the cross-entropy between q and the model's p = softmax(logits):

       loss = -sum_c q_c log p_c = (1 - e) * (-log p_y) + e * mean_c(-log p_c)

   averaged over the real (non-padding) target tokens. This is what
   `F.cross_entropy(logits, y, label_smoothing=e, ignore_index=pad)` computes. The model can no longer
   drive the right logit to infinity: the loss is smallest when p_y = 1 - e + e/K. "This hurts
   perplexity, as the model learns to be more unsure, but improves accuracy and BLEU score."

3. Teacher forcing. The decoder predicts token t + 1 from the TRUE tokens 0..t (not from its own
   guesses): with a target sequence [bos, y_1, ..., y_n, eos], the decoder's input is tgt[:, :-1]
   and the labels are tgt[:, 1:], and the causal mask keeps every position from peeking ahead. One
   forward pass trains every position at once.

4. Greedy decoding. At inference there is no true target: start from [bos], feed the tokens produced
   so far, append the most likely next token, and repeat until eos or a length limit. The paper uses
   beam search (beam size 4); greedy search is beam search with a beam of 1.

The copy task: the source is a random sequence of symbols and the target is the same sequence. It
needs every part of the model (the decoder must read the source through cross-attention, in order),
so a Transformer that learns it is a Transformer whose pieces all work.

Public names (the kata's contract):
    noam_lr(step, d_model, warmup_steps, factor=1.0) -> float, the rate above (step 0 counts as 1).
    make_optimizer(model) -> torch.optim.Adam over model.parameters(), lr = 1.0 (the schedule's base),
        betas (0.9, 0.98), eps 1e-9.
    make_scheduler(optimizer, d_model, warmup_steps, factor=1.0) -> a LambdaLR whose multiplier after
        k calls of step() is noam_lr(k, d_model, warmup_steps, factor).
    label_smoothing_loss(logits, target, smoothing=0.1, ignore_index=None) -> scalar tensor.
        logits (..., K) with the classes LAST, target (...) int64; equal to
        F.cross_entropy(logits.reshape(-1, K), target.reshape(-1), label_smoothing=smoothing,
        ignore_index=ignore_index); the mean over the targets that are not ignore_index.
    train_step(model, batch, optimizer, scheduler, pad_id, smoothing=0.1, max_grad_norm=None) -> float:
        one teacher-forced optimiser step on batch = (src, tgt); returns the loss.
    greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None) -> int64 (batch, n), n <= max_len,
        starting with bos_id; stops when every sequence has produced eos_id.
"""

import torch

# Your own causal mask (kata 9.7) and Transformer (kata 9.9) when you run this file; the reference
# solutions of those katas when it is graded, so that a mistake made there costs points there only.
from kata.earlier.decoder_block import causal_mask  # kata 9.7
from kata.earlier.transformer import Transformer, padding_mask  # kata 9.9

__all__ = [
    "Transformer", "greedy_decode", "label_smoothing_loss", "make_optimizer", "make_scheduler", "noam_lr",
    "train_step",
]


def noam_lr(step: int, d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    """The learning rate of the paper's schedule (section 5.3) at `step`.

        lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)

    It rises linearly up to step = warmup_steps, where it peaks at factor * (d_model *
    warmup_steps)^-0.5, then decays as 1/sqrt(step).

    Args:
        step:         the number of optimiser steps taken so far; step 0 counts as step 1.
        d_model:      the model width (512 in the paper).
        warmup_steps: the length of the linear warm-up (4000 in the paper).
        factor:       a constant multiplier (1.0 in the paper).

    Returns:
        The learning rate, a Python float.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def make_optimizer(model: torch.nn.Module) -> torch.optim.Adam:
    """The paper's optimiser: Adam with beta_1 = 0.9, beta_2 = 0.98 and eps = 1e-9 (section 5.3).

    The base learning rate is 1.0: the schedule (make_scheduler) multiplies it by noam_lr(step), so
    the rate the optimiser actually uses is exactly the Noam rate.

    Args:
        model: the model whose parameters (all of them) are optimised.

    Returns:
        torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9).
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def make_scheduler(optimizer: torch.optim.Optimizer, d_model: int, warmup_steps: int,
                   factor: float = 1.0) -> torch.optim.lr_scheduler.LambdaLR:
    """The Noam schedule as a PyTorch scheduler: lr = base_lr * noam_lr(step, ...).

    LambdaLR multiplies each parameter group's initial lr by the lambda of the number of
    scheduler.step() calls so far (0 when it is built). With make_optimizer's base lr of 1.0, the
    optimiser's lr after k calls of scheduler.step() is noam_lr(k, d_model, warmup_steps, factor).

    Args:
        optimizer:    the optimiser whose learning rate is scheduled (base lr 1.0).
        d_model, warmup_steps, factor: as for noam_lr.

    Returns:
        A torch.optim.lr_scheduler.LambdaLR; call its step() once after every optimizer.step().
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def label_smoothing_loss(logits: torch.Tensor, target: torch.Tensor, smoothing: float = 0.1,
                         ignore_index: int | None = None) -> torch.Tensor:
    """Cross-entropy against the smoothed targets q = (1 - e) one_hot(y) + e / K (section 5.4).

        loss_i = (1 - e) * (-log p_{i, y_i}) + e * mean_c(-log p_{i, c}),   p_i = softmax(logits_i)
        loss   = sum_i loss_i / (number of i with y_i != ignore_index),   over those i only

    Equal to F.cross_entropy(logits.reshape(-1, K), target.reshape(-1), label_smoothing=e,
    ignore_index=ignore_index) (which wants the classes on dim 1; here they are last). The ignored
    targets (padding) add nothing to the loss, count nothing in the mean, and get no gradient.

    Args:
        logits:       (..., K) unnormalised scores, the classes on the LAST dim, e.g. (batch, tgt_len, vocab).
        target:       (...) int64 class indices in [0, K), or ignore_index.
        smoothing:    e in [0, 1]; 0 gives the plain cross-entropy.
        ignore_index: a target value to skip (the padding token), or None.

    Returns:
        A scalar tensor (0-dim) of logits' dtype, differentiable with respect to logits.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def train_step(model: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor], optimizer: torch.optim.Optimizer,
               scheduler: torch.optim.lr_scheduler.LRScheduler, pad_id: int, smoothing: float = 0.1,
               max_grad_norm: float | None = None) -> float:
    """One teacher-forced training step on a batch; returns the loss.

        model.train()
        decoder input = tgt[:, :-1]   ([bos, y_1, ..., y_n]; padding after)
        labels        = tgt[:, 1:]    ([y_1, ..., y_n, eos]; padding after)
        logits = model(src, decoder input, padding mask of src, causal mask & padding mask of the input)
        loss = label_smoothing_loss(logits, labels, smoothing, ignore_index=pad_id)
        zero the gradients, loss.backward(), clip the gradient norm (if max_grad_norm),
        optimizer.step(), scheduler.step()

    Args:
        model:         a Transformer (kata 9.9): model(src, tgt, src_mask, tgt_mask) -> (batch, tgt_len, vocab).
        batch:         (src, tgt): src (batch, src_len) and tgt (batch, tgt_len) int64 token ids, padded
                       with pad_id at the end; tgt starts with bos.
        optimizer:     e.g. make_optimizer(model).
        scheduler:     e.g. make_scheduler(optimizer, ...); stepped once, after the optimiser.
        pad_id:        the padding token: masked out of attention and ignored by the loss.
        smoothing:     label smoothing e.
        max_grad_norm: if not None, clip the gradients' total norm to it (torch.nn.utils.clip_grad_norm_).

    Returns:
        The loss of this batch (before the update) as a Python float.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def greedy_decode(model: torch.nn.Module, src: torch.Tensor, max_len: int, bos_id: int, eos_id: int,
                  src_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Decode greedily: start from bos, append the most likely next token until eos or max_len.

        memory = model.encode(src, src_mask)
        ys = [bos]
        repeat: logits = model.generator(model.decode(ys, memory, src_mask, causal_mask)[:, -1])
                ys = ys + [argmax(logits)]

    Every sequence of the batch is decoded at once. A sequence that has produced eos_id is finished:
    its later positions are eos_id too. Decoding stops as soon as every sequence is finished, or when
    the output has max_len tokens (bos included). No autograd graph is built (torch.no_grad()), and
    the model's mode is left as it is: call model.eval() first.

    Args:
        model:    a Transformer (kata 9.9) with encode, decode and generator.
        src:      (batch, src_len) int64 source tokens.
        max_len:  the largest output length, bos included (>= 1).
        bos_id:   the token every output starts with.
        eos_id:   the end-of-sequence token.
        src_mask: None, or the source padding mask (batch, 1, 1, src_len), True on real tokens.

    Returns:
        (batch, n) int64 on src's device, n <= max_len, column 0 all bos_id.
    """
    # YOUR CODE HERE
    raise NotImplementedError()
