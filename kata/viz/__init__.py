"""`kata viz ID`: pictures of the student's own code: attention maps, encodings, schedules, training curves.

A student who passed kata 9.4 sees the attention weights of *their* MultiHeadAttention; one who has not
yet sees the reference solution's, labelled as such in red, with the reason and the `kata check` to run.

    kata.viz.data      the numbers: modules and functions in, tensors out (no matplotlib, no course)
    kata.viz.figure    a picture as plain data: panels (Heatmap, Lines) with titles, labels, what to look for
    kata.viz.katas     what each kata's pictures show, built from a loaded module with kata.viz.data
    kata.viz.draw      whose code draws (the progress file decides; the reference when yours raises)
    kata.viz.png       a figure as a PNG, with matplotlib (no pyplot, no display needed)
    kata.viz.terminal  a figure as coarse heatmaps and sparklines in the terminal (rich), and the report
    kata.viz.cli       the click command

This module stays light (no torch, no matplotlib): the `kata` command imports it at start-up.
"""

from __future__ import annotations

# The katas that have pictures, and what they draw (kata.viz.katas.KATAS builds them; a test keeps both in step).
PICTURES = {
    "9.3": "attention weights of one head on a sentence, without and with a causal mask",
    "9.4": "attention weights of every head on a sentence",
    "9.6": "token similarity after each encoder block, and the signal through 10 blocks, with and without "
           "residual connections",
    "9.8": "the positional-encoding table and the dot product between positions by offset",
    "9.10": "the Noam schedule, the copy task's training curves, and the trained model's attention",
}
