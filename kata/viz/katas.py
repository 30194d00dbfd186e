"""What each kata's pictures show: a kata's module in, Figures out.

Each builder takes the module of one kata (the student's exercise or the reference solution, loaded by
`kata.viz.draw`), builds that kata's pieces with fixed seeds, computes the numbers with `kata.viz.data`
and lays them out as Figures. Builders only call the names the kata's contract fixes (KATAS[id].needs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import numpy as np
import torch

from kata import copy_task
from kata.viz import data
from kata.viz.figure import DIVERGING, Figure, Heatmap, Lines, Series

# Small models, so that each picture is drawn in a blink and its labels stay readable.
D_MODEL = 64
N_HEADS = 4
D_HEAD = 16  # kata 9.3's single head: d_model / n_heads, as one head of kata 9.4 would be
D_FF = 4 * D_MODEL  # the paper's ratio (2048 / 512)
SIMILARITY_BLOCKS = 4  # encoder blocks in the similarity picture
SIGNAL_BLOCKS = 10  # encoder blocks in the signal picture
PE_LEN, PE_D_MODEL = 200, 128  # the positional-encoding table drawn
PE_POSITIONS, PE_OFFSETS = (50, 100, 150), range(-49, 50)  # PE[p] . PE[p + k]: every p + k inside the table
NOAM_PAIRS = ((512, 4000), (512, 8000), (256, 4000), (1024, 4000))  # (d_model, warmup_steps), factor 1
NOAM_STEPS = 20_000

UNTRAINED = ("Untrained: seeded random weights, and each word a fixed random vector without positions (kata 9.8 "
             "adds them), so the two \"the\"s are one vector.")


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().to("cpu", torch.float64).numpy()


def _attention(title: str, weights: torch.Tensor, queries: list[str], keys: list[str], vmax: float,
               ylabel: str = "query", xlabel: str = "key") -> Heatmap:
    """Attention weights (q_len, k_len) as a heat map: one row per query, its weights over the keys."""
    return Heatmap(title, _numpy(weights), ylabel, xlabel, rows=queries, cols=keys, vmin=0.0, vmax=vmax,
                   colorbar="attention weight")


def attention_head(module: ModuleType) -> list[Figure]:
    """Kata 9.3: one AttentionHead on the sentence, without a mask and with a causal one."""
    words, x = data.sentence(D_MODEL)  # x (1, n, d_model)
    torch.manual_seed(data.SEED)
    head = module.AttentionHead(D_MODEL, D_HEAD)
    plain = data.head_weights(head, x)  # (n, n)
    masked = data.head_weights(head, x, data.causal(len(words)))  # (n, n)
    return [Figure(
        "attention", f"Attention weights of one head: AttentionHead(d_model={D_MODEL}, d_head={D_HEAD})",
        "Each row is one query word's weights over the key words; every row sums to 1. " + UNTRAINED
        + " So the weights stay close to uniform (1/10) and both \"the\"s get the same weight from every query. "
        "With the causal mask a word sees only itself and the words before it: above the diagonal is exactly 0.",
        [_attention("self-attention, no mask", plain, words, words, float(plain.max())),
         _attention("with a causal mask (True on and below the diagonal)", masked, words, words, 1.0)])]


def multi_head_attention(module: ModuleType) -> list[Figure]:
    """Kata 9.4: a head with hand-set weights that attends to the previous word, beside every head of an
    untrained MultiHeadAttention on the sentence."""
    words, x = data.sentence(D_MODEL)  # x (1, n, d_model)
    d_k = D_MODEL // N_HEADS
    torch.manual_seed(data.SEED)
    handset = module.MultiHeadAttention(D_MODEL, N_HEADS)
    data.set_previous_word_head(handset, D_MODEL, d_k)
    previous = data.multi_head_weights(handset, data.with_positions(x, d_k), N_HEADS)[0]  # (n, n): head 1
    torch.manual_seed(data.SEED)
    mha = module.MultiHeadAttention(D_MODEL, N_HEADS)
    weights = data.multi_head_weights(mha, x, N_HEADS)  # (n_heads, n, n)
    vmax = float(weights.max())
    return [Figure(
        "attention", f"Attention weights per head: MultiHeadAttention(d_model={D_MODEL}, n_heads={N_HEADS}), "
                     f"self-attention, d_k = {d_k}",
        "One map per head (rows: queries, columns: keys; every row sums to 1). Left, on its own colour scale: head 1 "
        f"of your MultiHeadAttention with hand-set weights. The words' last {d_k} features hold their positions "
        "(kata 9.8's sines and cosines); w_k passes them on and w_q turns each back by one position, so each word's "
        "weight sits on the word before it (the first word has none and takes itself, the nearest): the pattern of a "
        "trained 'previous token' head. Right: the heads of an untrained MultiHeadAttention, each projecting the "
        "words with its own random slice of w_q and w_k. " + UNTRAINED + " So their weights stay near 1/10: "
        "training is what gives heads patterns.",
        [_attention("hand-set head 1: the previous word", previous, words, words, 1.0),
         *(_attention(f"untrained head {h + 1}", weights[h], words, words, vmax)
           for h in range(N_HEADS))])]


def encoder_block(module: ModuleType) -> list[Figure]:
    """Kata 9.6: token similarity through the blocks, and the signal through 10 blocks, with and without the
    residual connections (the same weights, the sub-layers called directly)."""
    words, x = data.sentence(D_MODEL)  # x (1, n, d_model)
    x = x.double()  # float64: the collapse without residuals goes far below float32's resolution

    def blocks(n_layers: int, norm_first: bool) -> list:
        torch.manual_seed(data.SEED)
        encoder = module.Encoder(n_layers, D_MODEL, N_HEADS, D_FF, dropout=0.0, norm_first=norm_first)
        return list(encoder.double().eval().layers)

    stack = blocks(SIMILARITY_BLOCKS, norm_first=False)
    panels = []
    for residual, how in ((True, "with residuals"), (False, "NO residuals")):
        similarity = data.cosine_similarity(data.through_blocks(stack, x, residual=residual, norm_first=False))
        for layer in range(SIMILARITY_BLOCKS + 1):
            panels.append(Heatmap("the input" if layer == 0 else f"after block {layer}", _numpy(similarity[layer]),
                                  how, "word", rows=words, cols=words, vmin=-1.0, vmax=1.0, cmap=DIVERGING,
                                  colorbar="cosine similarity"))
    similarity_figure = Figure(
        "similarity", f"Token similarity after each block: Encoder({SIMILARITY_BLOCKS} blocks, d_model={D_MODEL}, "
                      f"n_heads={N_HEADS}, d_ff={D_FF}), post-norm",
        "Cosine similarity between the words' vectors (1: the same direction). Top: the blocks as written; the "
        "words stay apart. Bottom: the same weights without the residual sums x + ...: attention averages the "
        "words, and within two blocks every word holds the same vector, the sentence is gone. " + UNTRAINED,
        panels, columns=SIMILARITY_BLOCKS + 1)

    depth = np.arange(SIGNAL_BLOCKS + 1)
    norms, spreads = [], []
    for norm_first, name, style in ((False, "post-norm", "-"), (True, "pre-norm", "--")):
        stack = blocks(SIGNAL_BLOCKS, norm_first)
        for residual, color in ((True, "tab:green"), (False, "tab:red")):
            outputs = data.through_blocks(stack, x, residual=residual, norm_first=norm_first)
            label = f"{name}, {'with' if residual else 'without'} residuals"
            norms.append(Series(label, depth, _numpy(data.token_norm(outputs)), style + "o", color))
            spreads.append(Series(label, depth, _numpy(data.token_spread(outputs)), style + "o", color))
    signal_figure = Figure(
        "signal", f"The signal through {SIGNAL_BLOCKS} stacked encoder blocks, with and without residual connections",
        f"Left: the words' mean norm after each block. Post-norm ends every block with a LayerNorm, which pins the "
        f"norm at sqrt(d_model) = {D_MODEL ** 0.5:g} either way (its two curves lie on top of each other); pre-norm's "
        "residual stream grows with depth. Right, on a log scale: what tells the words apart, the mean distance of "
        "each word's vector from their average. Without residual connections it vanishes within a few blocks, down "
        "to float64's rounding error; with them it survives. Untrained blocks, dropout 0.",
        [Lines("mean norm of the word vectors", "blocks applied", "mean ||x_t||", norms),
         Lines("what tells the words apart", "blocks applied", "mean ||x_t - mean over words||", spreads,
               logy=True)])
    return [similarity_figure, signal_figure]


def _encoding_table(module: ModuleType, max_len: int) -> torch.Tensor:
    """sinusoidal_positional_encoding(max_len, PE_D_MODEL), checked: (max_len, d_model)."""
    table = module.sinusoidal_positional_encoding(max_len, PE_D_MODEL)
    if not isinstance(table, torch.Tensor) or tuple(table.shape) != (max_len, PE_D_MODEL):
        got = tuple(table.shape) if isinstance(table, torch.Tensor) else type(table).__name__
        raise ValueError(f"sinusoidal_positional_encoding({max_len}, {PE_D_MODEL}) should be a tensor of shape "
                         f"{(max_len, PE_D_MODEL)}; got {got}")
    return table


def positional_encoding(module: ModuleType) -> list[Figure]:
    """Kata 9.8: the sinusoidal table, the dot products between its rows, and their dependence on the offset."""
    pe = _encoding_table(module, PE_LEN)  # (PE_LEN, d_model)
    dots = data.offset_dot_products(pe.double(), PE_POSITIONS, PE_OFFSETS)  # (positions, offsets)
    offsets = np.array(PE_OFFSETS)
    styles = ("-", "--", ":")
    return [Figure(
        "positional-encoding", f"Sinusoidal positional encoding: sinusoidal_positional_encoding({PE_LEN}, "
                               f"{PE_D_MODEL})",
        "Left: one row per position; dimension pair i turns at 1/10000^(2i/d_model) radians per position, so the "
        "first columns flicker and the last barely move. Middle: the dot product of every pair of positions is the "
        f"same along each diagonal. Right: PE[p] . PE[p + k] from three positions p of the same table: the curves "
        f"coincide (only the offset k matters), peak at k = 0 (d_model / 2 = {PE_D_MODEL // 2}) and are symmetric.",
        [Heatmap("the table PE", _numpy(pe), "position", "dimension (even: sin, odd: cos)", vmin=-1.0, vmax=1.0,
                 cmap=DIVERGING, colorbar="value"),
         Heatmap("PE . PE^T: every pair of positions", _numpy(pe.double() @ pe.double().T), "position", "position",
                 colorbar="dot product PE[p] . PE[q]"),
         Lines("PE[p] . PE[p + k] by offset", "offset k", "PE[p] . PE[p + k]",
               [Series(f"p = {p}", offsets, _numpy(dots[i]), styles[i]) for i, p in enumerate(PE_POSITIONS)])])]


def training(module: ModuleType) -> list[Figure]:
    """Kata 9.10: the Noam schedule, then a real copy-task run: its curves and the trained model's attention."""
    copy = data.train_copy(module)
    return [_schedule(module.noam_lr), _curves(copy), _copy_attention(copy, module.padding_mask)]


def _schedule(noam_lr: Callable) -> Figure:
    steps = np.arange(1, NOAM_STEPS + 1, 10)
    paper = [Series(f"d_model {d}, warm-up {w}", steps, _numpy(data.noam_curve(noam_lr, steps, d, w)))
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
                       _numpy(capstone), color="tab:purple")])])


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
    panels = [_attention(f"cross-attention, head {h + 1}", cross[h], decoder_in, source, 1.0, "decoder input",
                         "source") for h in range(n_heads)]
    panels += [_attention(f"masked self-attention, head {h + 1}", masked[h], decoder_in, decoder_in, 1.0,
                          "decoder input", "decoder input") for h in range(n_heads)]
    return Figure(
        "copy-attention", "The trained model's attention on a held-out sequence (the decoder block)",
        "Top: cross-attention. Row t has read <bos> and t symbols and must output the next one, which sits at "
        "source position t: the weights lie on the diagonal (the last row outputs <eos>). Bottom: the decoder's "
        "masked self-attention, exactly 0 above the diagonal.",
        panels, columns=n_heads)


@dataclass(frozen=True)
class KataPictures:
    """The pictures of one kata: what of the student's they show, the names they use, how they are built."""

    subject: str  # for titles: "your MultiHeadAttention"
    needs: tuple[str, ...]  # the kata module's names the builder calls
    build: Callable[[ModuleType], list[Figure]]


KATAS = {
    "9.3": KataPictures("AttentionHead", ("AttentionHead",), attention_head),
    "9.4": KataPictures("MultiHeadAttention", ("MultiHeadAttention",), multi_head_attention),
    "9.6": KataPictures("Encoder and EncoderBlock", ("Encoder",), encoder_block),
    "9.8": KataPictures("sinusoidal_positional_encoding", ("sinusoidal_positional_encoding",), positional_encoding),
    "9.10": KataPictures("training code and Transformer",
                         ("noam_lr", "make_optimizer", "make_scheduler", "train_step", "greedy_decode", "Transformer",
                          "padding_mask"), training),
}
