"""`kata viz 9.10`: the Noam schedule, then a real copy-task run: its curves and the trained model's attention."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import numpy as np

from kata import copy_task
from kata.viz import data
from kata.viz.figure import Figure, Lines, Series
from kata.viz.pictures import attention_map, numpy_of

SUBJECT = "training code and Transformer"
NEEDS = ("noam_lr", "make_optimizer", "make_scheduler", "train_step", "greedy_decode", "Transformer", "padding_mask")
NOAM_PAIRS = ((512, 4000), (512, 8000), (256, 4000), (1024, 4000))  # (d_model, warmup_steps), factor 1
NOAM_STEPS = 20_000


def build(module: ModuleType) -> list[Figure]:
    """Kata 9.10: the Noam schedule, then a real copy-task run: its curves and the trained model's attention."""
    copy = data.train_copy(module)
    return [_schedule(module.noam_lr), _curves(copy), _copy_attention(copy, module.padding_mask)]


def _schedule(noam_lr: Callable) -> Figure:
    steps = np.arange(1, NOAM_STEPS + 1, 10)
    paper = [Series(f"d_model {d}, warm-up {w}", steps, numpy_of(data.noam_curve(noam_lr, steps, d, w)))
             for d, w in NOAM_PAIRS]
    task = copy_task.TASK
    task_steps = np.arange(1, task.steps + 1)
    capstone = data.noam_curve(noam_lr, task_steps, task.d_model, task.warmup_steps, task.factor)
    return Figure(
        "schedule", "The Noam learning-rate schedule: noam_lr(step, d_model, warmup_steps, factor)",
        "lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5): a linear rise for warmup_steps "
        "steps, the peak, then a 1/sqrt(step) decay. A wider model gets a lower rate, a longer warm-up a later and "
        f"lower peak. Right: the copy task's schedule (d_model {task.d_model}, warm-up {task.warmup_steps}, factor "
        f"{task.factor}).",
        [Lines("the paper's scale (factor 1)", "step", "learning rate", paper),
         Lines("the copy task (kata 9.10's capstone)", "step", "learning rate",
               [Series(f"d_model {task.d_model}, warm-up {task.warmup_steps}, factor {task.factor}", task_steps,
                       numpy_of(capstone), color="tab:purple")])])


def _curves(copy: data.CopyRun) -> Figure:
    run, task = copy.run, copy_task.TASK
    done = np.arange(1, run.steps + 1)
    floor = copy_task.smoothed_loss_floor(task)
    watched = np.array(run.watched).reshape(-1, 2)  # (measurements, 2): step, accuracy
    decided = np.array(run.validation).reshape(-1, 2)  # the check's own evaluations, which stop the run
    lrs = np.array(copy.lrs)
    return Figure(
        "training", f"Training the copy task: train_step, make_optimizer, make_scheduler (seed {data.SEED}, "
                    f"{run.steps} steps, as kata train-demo)",
        f"The run `kata train-demo --seed {data.SEED}` makes, step for step. The label-smoothed loss falls towards "
        f"its floor, {floor:.2f} (the entropy of the smoothed target: it never reaches 0). Greedy whole-sequence "
        f"accuracy on {task.n_validation} validation sequences, drawn every "
        f"{data.WATCH_EVERY} steps; the run itself looks at it from step {task.first_eval} on, every "
        f"{task.eval_every} steps (the large dots), and stops once it reaches {task.stop_accuracy}. Held-out "
        f"accuracy: {run.accuracy:.3f} after {run.steps} steps (the capstone asks for {task.target_accuracy}). "
        "Right: the rate the scheduler gave each step; steps 1 and 2 share one rate, because step 0 counts as step 1 "
        "(0^-0.5 is undefined).",
        [Lines("training loss", "step", "label-smoothed loss",
               [Series("loss per batch", done, np.array(run.losses), color="tab:blue"),
                Series(f"floor {floor:.2f}", done, np.full(run.steps, floor), ":", "gray")]),
         Lines("validation accuracy", "step", "whole-sequence accuracy",
               [Series(f"greedy decoding, every {data.WATCH_EVERY} steps", watched[:, 0], watched[:, 1], "o-",
                       "tab:green"),
                Series("the run's own evaluations", decided[:, 0], decided[:, 1], "o", "darkgreen", markersize=9),
                Series(f"stop at {task.stop_accuracy}", done, np.full(run.steps, task.stop_accuracy), ":", "gray")],
               ylim=(0.0, 1.02)),
         Lines("learning rate", "step", "learning rate",
               [Series("the optimiser's lr", done, lrs, color="tab:purple"),
                Series("steps 1 and 2: one rate (step 0 counts as step 1)", done[:2], lrs[:2], "o", "black")])])


def _copy_attention(copy: data.CopyRun, padding_mask: Callable) -> Figure:
    n_heads = copy_task.TASK.n_heads
    src, tgt_in = data.copy_example(copy.run)  # (1, n), (1, n + 1)
    cross, masked = data.copy_attention(copy.run.model, padding_mask, src, tgt_in, n_heads)
    source = [copy_task.format_tokens(t) for t in src[0, :, None]]  # one label per token
    decoder_in = [copy_task.format_tokens(t) for t in tgt_in[0, :, None]]
    panels = [attention_map(f"cross-attention, head {h + 1}", cross[h], decoder_in, source, 1.0, "decoder input",
                         "source") for h in range(n_heads)]
    panels += [attention_map(f"masked self-attention, head {h + 1}", masked[h], decoder_in, decoder_in, 1.0,
                          "decoder input", "decoder input") for h in range(n_heads)]
    return Figure(
        "copy-attention", "The trained model's attention on a held-out sequence (the decoder block)",
        "Top: cross-attention. Row t has read <bos> and t symbols and must output the next one, which sits at "
        "source position t: the weights lie on the diagonal (the last row outputs <eos>). Bottom: the decoder's "
        "masked self-attention, exactly 0 above the diagonal.",
        panels, columns=n_heads)
