"""The capstone tasks of kata 9.10 (kata.capstone lists them, with their recipes): data and training,
shared by its grader, `kata train-demo`, `kata viz 9.10` and bench/.

The copy task (the capstone's check): the source is a random sequence of symbols, the target is the same
sequence between bos and eos:

    src = [7, 3, 9, 4, 0, 0]            (symbols, then padding)
    tgt = [1, 7, 3, 9, 4, 2, 0, 0]      (bos, the symbols, eos, then padding)

The reversal task: the target is the source backwards, tgt = [1, 4, 9, 3, 7, 2, 0, 0]. Output t comes
from source position len - 1 - t, which moves with the sequence's length, and its validation and
held-out batches carry `eval_padding` more pad columns than any training batch (as a short sentence
batched with a long one does). A model whose padding masks hide the padding cannot tell; one whose
encoder or cross-attention reads the padding meets inputs it never trained on and gets them wrong. The
copy task's evaluation is padded as its training, so it passes such a model: it never tests the masks.

The copy task is the smallest that needs most pieces of the Transformer: the decoder can only produce
the right symbol at step t by finding source position t through cross-attention (positional encodings
tell the positions apart), the causal mask and teacher forcing must be right for training to mean
anything, and greedy decoding must stop at eos. The Annotated Transformer uses it as its first
example. The padding masks it leaves to the reversal task.

`train_copy_task` runs the training loop (of either task) around a student's (or the reference's) pieces: the
optimiser, the Noam scheduler and `train_step` of kata 9.10, the Transformer of kata 9.9. It measures
whole-sequence greedy accuracy on held-out sequences (generated from another seed).

Everything here is deterministic for a given seed: the model's initial weights (torch.manual_seed),
the training batches and the held-out set (their own torch.Generator).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from kata.capstone import N_SPECIAL, TASK, TASKS, CopyTask

PAD_ID = 0
BOS_ID = 1
EOS_ID = 2
HELDOUT_SEED_OFFSET = 1_000_003  # the held-out set's generator seed is seed + this: another stream
VALIDATION_SEED_OFFSET = 2_000_029  # and the validation set's


def make_batch(task: CopyTask, n: int, generator: torch.Generator,
               extra_padding: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """n random examples: src (n, max_len + extra_padding) and tgt (n, max_len + 2), int64, padded with PAD_ID."""
    lengths = torch.randint(task.min_len, task.max_len + 1, (n,), generator=generator)  # (n,)
    symbols = torch.randint(N_SPECIAL, task.vocab_size, (n, task.max_len), generator=generator)  # (n, max_len)
    position = torch.arange(task.max_len)  # (max_len,)
    real = position < lengths[:, None]  # (n, max_len), True on the symbols
    src = torch.where(real, symbols, PAD_ID)  # (n, max_len)
    answer = src
    if task.reverse:  # target position t holds source position length - 1 - t
        answer = torch.where(real, src.gather(1, (lengths[:, None] - 1 - position).clamp(min=0)), PAD_ID)
    tgt = torch.full((n, task.decode_len), PAD_ID, dtype=torch.long)  # (n, max_len + 2)
    tgt[:, 0] = BOS_ID
    tgt[:, 1:task.max_len + 1] = answer
    tgt[torch.arange(n), lengths + 1] = EOS_ID
    return torch.nn.functional.pad(src, (0, extra_padding), value=PAD_ID), tgt


def heldout_set(task: CopyTask, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The held-out sequences of a run: from their own generator, never seen in training."""
    return make_batch(task, task.n_heldout, torch.Generator().manual_seed(seed + HELDOUT_SEED_OFFSET),
                      task.eval_padding)


def validation_set(task: CopyTask, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The validation sequences of a run (early stopping): a third stream, neither training nor test."""
    return make_batch(task, task.n_validation, torch.Generator().manual_seed(seed + VALIDATION_SEED_OFFSET),
                      task.eval_padding)


def build_model(Transformer, task: CopyTask) -> torch.nn.Module:
    """The task's model from a Transformer class (kata 9.9's contract), on the CPU."""
    return Transformer(task.vocab_size, task.vocab_size, **task.model_kwargs())


def until_eos(tokens: torch.Tensor) -> torch.Tensor:
    """tokens (batch, n) with everything after each row's first EOS_ID replaced by EOS_ID, padded
    with EOS_ID to the right: two decodings compare equal when they agree up to their eos."""
    seen = (tokens == EOS_ID).long().cumsum(dim=1)  # (batch, n), > 0 from the first eos on
    after = torch.cat([torch.zeros_like(seen[:, :1]), seen[:, :-1]], dim=1) > 0  # strictly after it
    return tokens.masked_fill(after, EOS_ID)


def decodings_match(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(batch,) bool: two decodings agree up to and including each row's first eos (what follows is not
    compared; a pad token is a token like any other)."""
    width = max(a.size(1), b.size(1))
    a, b = (torch.nn.functional.pad(until_eos(t), (0, width - t.size(1)), value=EOS_ID) for t in (a, b))
    return (a == b).all(dim=1)


def sequence_matches(predicted: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """(batch,) bool: the prediction equals the target up to and including eos (the target's padding ends it)."""
    return decodings_match(predicted, tgt.masked_fill(tgt == PAD_ID, EOS_ID))


def format_tokens(tokens: torch.Tensor) -> str:
    """A row of token ids as text: symbols as numbers, <bos>, <eos>, padding dropped."""
    names = {BOS_ID: "<bos>", EOS_ID: "<eos>"}
    out = []
    for t in tokens.tolist():
        if t == PAD_ID:
            continue
        out.append(names.get(t, str(t)))
        if t == EOS_ID:
            break
    return " ".join(out)


@dataclass
class CopyTaskRun:
    """What a training run did and reached."""

    accuracy: float  # whole-sequence greedy accuracy on the held-out set
    token_accuracy: float  # the fraction of target tokens (eos included) decoded right
    steps: int  # training steps taken
    seconds: float  # training and evaluation, wall clock
    losses: list[float] = field(default_factory=list)  # train_step's return value, one per step
    validation: list[tuple[int, float]] = field(default_factory=list)  # (step, validation accuracy)
    watched: list[tuple[int, float]] = field(default_factory=list)  # (step, accuracy) every watch_every steps
    kept_step: int = 0  # the step whose weights were kept (the best validation accuracy)
    stopped: str = ""  # why training stopped before `steps` other than early stopping (a NaN loss, time)
    model: torch.nn.Module | None = None
    heldout: tuple[torch.Tensor, torch.Tensor] | None = None  # (src, tgt)
    predictions: torch.Tensor | None = None  # greedy decodings of the held-out sources

    @property
    def final_loss(self) -> float:
        """The mean loss of the last 10 steps (one step's loss is noisy)."""
        tail = self.losses[-10:]
        return sum(tail) / len(tail) if tail else math.nan


def evaluate(model: torch.nn.Module, task: CopyTask, src: torch.Tensor, tgt: torch.Tensor, *,
             greedy_decode: Callable, padding_mask: Callable) -> tuple[float, float, torch.Tensor]:
    """(whole-sequence accuracy, token accuracy, predictions) of greedy decoding on (src, tgt)."""
    was_training = model.training
    model.eval()
    try:
        predicted = greedy_decode(model, src, task.decode_len, BOS_ID, EOS_ID, padding_mask(src, PAD_ID))
    finally:
        model.train(was_training)
    width = tgt.size(1)
    pred = torch.nn.functional.pad(until_eos(predicted), (0, max(0, width - predicted.size(1))), value=EOS_ID)
    pred = pred[:, :width]
    real = tgt != PAD_ID  # (batch, width): the target's tokens, bos and eos included
    token_accuracy = float(((pred == tgt) & real)[:, 1:].sum() / real[:, 1:].sum())
    accuracy = float(sequence_matches(predicted, tgt).float().mean())
    return accuracy, token_accuracy, predicted


def train_copy_task(task: CopyTask = TASK, *, Transformer, padding_mask: Callable, make_optimizer: Callable,
                    make_scheduler: Callable, train_step: Callable, greedy_decode: Callable, seed: int = 0,
                    steps: int | None = None, time_limit: float | None = None,
                    on_step: Callable[[int, float, float, int], None] | None = None,
                    on_eval: Callable[[int, float], None] | None = None,
                    watch_every: int | None = None) -> CopyTaskRun:
    """Train a fresh model on the copy task with the given pieces, then measure held-out accuracy.

    The loop is the paper's: make_optimizer(model), make_scheduler(optimizer, d_model, warmup_steps,
    factor), then up to `steps` calls of train_step(model, (src, tgt), optimizer, scheduler, PAD_ID,
    smoothing, max_grad_norm) on fresh random batches. `on_step(step, loss, lr, tokens)` is called
    after each step with the learning rate that step used and the number of target tokens it saw.

    Early stopping: from step first_eval on, every eval_every steps (and at the last step), greedy
    accuracy on the validation set is measured (`on_eval(step, accuracy)`); training stops once it
    reaches stop_accuracy, and the weights of the best evaluation are the ones tested. The test set
    (held-out) decides nothing: it is decoded once, at the end, by `greedy_decode`.

    A loss that is not a finite number, or training longer than `time_limit` seconds, stops the run
    (`stopped` says why); the accuracy is then measured as it is.

    `watch_every` also measures the validation accuracy every that many steps, into `watched`, for a curve
    (`kata viz 9.10`). Those measurements decide nothing and draw no random numbers: the run, its steps
    and its accuracy are the same with or without them, as `kata train-demo` with the same seed shows.
    """
    steps = task.steps if steps is None else steps
    started = time.perf_counter()
    torch.manual_seed(seed)
    model = build_model(Transformer, task)
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer, task.d_model, task.warmup_steps, task.factor)
    generator = torch.Generator().manual_seed(seed)
    val_src, val_tgt = validation_set(task, seed)
    losses: list[float] = []
    validation: list[tuple[int, float]] = []
    watched: list[tuple[int, float]] = []
    best: tuple[float, int, dict] | None = None  # (accuracy, step, weights)
    stopped = ""
    for step in range(1, steps + 1):
        src, tgt = make_batch(task, task.batch_size, generator)
        # Read only for on_step: an optimiser in the student's process (the grader's run) sends its parameters with it.
        lr = float(optimizer.param_groups[0]["lr"]) if on_step is not None else math.nan
        loss = float(train_step(model, (src, tgt), optimizer, scheduler, PAD_ID, task.smoothing, task.max_grad_norm))
        losses.append(loss)
        if on_step is not None:
            on_step(step, loss, lr, int((tgt[:, 1:] != PAD_ID).sum()))
        if not math.isfinite(loss):
            stopped = f"the loss is {loss}"
            break
        if time_limit is not None and time.perf_counter() - started > time_limit:
            stopped = f"{step} steps took more than {time_limit:g} s"
            break
        decide = step == steps or (step >= task.first_eval and (step - task.first_eval) % task.eval_every == 0)
        if decide or (watch_every and step % watch_every == 0):
            accuracy = evaluate(model, task, val_src, val_tgt, greedy_decode=greedy_decode,
                                padding_mask=padding_mask)[0]
            watched.append((step, accuracy))
        if decide:
            validation.append((step, accuracy))
            if on_eval is not None:
                on_eval(step, accuracy)
            if best is None or accuracy > best[0]:
                best = (accuracy, step, copy.deepcopy(model.state_dict()))
            if accuracy >= task.stop_accuracy:
                break
    kept_step = len(losses)
    if best is not None and not stopped and best[1] != len(losses):
        model.load_state_dict(best[2])  # the weights of the best validation accuracy
        kept_step = best[1]
    src, tgt = heldout_set(task, seed)
    accuracy, token_accuracy, predicted = evaluate(model, task, src, tgt, greedy_decode=greedy_decode,
                                                   padding_mask=padding_mask)
    return CopyTaskRun(accuracy, token_accuracy, len(losses), time.perf_counter() - started, losses, validation,
                       watched, kept_step, stopped, model, (src, tgt), predicted)


def smoothed_loss_floor(task: CopyTask) -> float:
    """The smallest label-smoothed loss a perfect copier can reach: the entropy of the smoothed target."""
    e, k = task.smoothing, task.vocab_size
    right = 1 - e + e / k
    return -(right * math.log(right) + (k - 1) * (e / k) * math.log(e / k)) if e > 0 else 0.0


def main(argv: list[str] | None = None) -> int:
    """`python -m kata.copy_task [--task copy] [--seeds 0 1 2] [--threads 1]`: a capstone task's training with the
    reference solutions (the capstone kata's and those it builds on), timed: what its README reports. For course
    authors."""
    import argparse
    import os
    import statistics

    parser = argparse.ArgumentParser(prog="python -m kata.copy_task", description=main.__doc__)
    parser.add_argument("--task", choices=list(TASKS), default=TASK.name)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the grading child uses cores // 2)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    from kata.course import load_course
    from kata.student_code import load_reference

    course = load_course()
    ref = load_reference(course, course.capstone)
    rows = []
    for seed in args.seeds:
        cpu = time.process_time()
        run = train_copy_task(TASKS[args.task], Transformer=ref.Transformer, padding_mask=ref.padding_mask,
                              make_optimizer=ref.make_optimizer, make_scheduler=ref.make_scheduler,
                              train_step=ref.train_step, greedy_decode=ref.greedy_decode, seed=seed)
        cpu = time.process_time() - cpu
        rows.append((run.seconds, cpu, run.accuracy))
        print(f"seed {seed}: {run.steps} steps, {run.seconds:.1f} s wall, {cpu:.1f} s CPU, held-out accuracy "
              f"{run.accuracy:.3f} (tokens {run.token_accuracy:.4f}), validation {run.validation}", flush=True)
    print(f"median of {len(rows)}: {statistics.median(r[0] for r in rows):.1f} s wall, "
          f"{statistics.median(r[1] for r in rows):.1f} s CPU, accuracy {statistics.median(r[2] for r in rows):.3f} "
          f"(task {args.task}, torch {torch.__version__}, {args.threads} thread(s), load average "
          f"{os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
