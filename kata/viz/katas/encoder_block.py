"""`kata viz 9.6`: token similarity through stacked encoder blocks, and the signal through 10 of them, with
and without residual connections."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import torch

from kata.viz import data
from kata.viz.figure import DIVERGING, Figure, Heatmap, Lines, Series
from kata.viz.pictures import D_FF, D_MODEL, N_HEADS, UNTRAINED, numpy_of

SUBJECT = "Encoder and EncoderBlock"
NEEDS = ("Encoder",)
SIMILARITY_BLOCKS = 4  # encoder blocks in the similarity picture
SIGNAL_BLOCKS = 10  # encoder blocks in the signal picture


def build(module: ModuleType) -> list[Figure]:
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
            panels.append(Heatmap("the input" if layer == 0 else f"after block {layer}", numpy_of(similarity[layer]),
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
            norms.append(Series(label, depth, numpy_of(data.token_norm(outputs)), style + "o", color))
            spreads.append(Series(label, depth, numpy_of(data.token_spread(outputs)), style + "o", color))
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
