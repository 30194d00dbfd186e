"""`kata viz ID`: pictures of the student's own code: attention maps, encodings, schedules, training curves.

A student who passed kata 9.4 sees the attention weights of *their* MultiHeadAttention; one who has not
yet sees the reference solution's, labelled as such in red, with the reason and the `kata check` to run.

    kata.viz.data      the numbers: modules and functions in, tensors out (no matplotlib, no course)
    kata.viz.figure    a picture as plain data: panels (Heatmap, Lines) with titles, labels, what to look for
    kata.viz.pictures  what every kata's pictures share, and loading one kata's (kata.viz.katas.<slug>)
    kata.viz.katas     each kata's pictures: its pieces built with fixed seeds, laid out as Figures
    kata.viz.draw      whose code draws (the progress file decides; the reference when yours raises)
    kata.viz.png       a figure as a PNG, with matplotlib (no pyplot, no display needed)
    kata.viz.terminal  a figure as coarse heatmaps and sparklines in the terminal (rich), and the report
    kata.viz.cli       the click command

Which katas have pictures, and what they show, course.toml says (`pictures`); the code that draws each
kata's is here, in kata.viz.katas, so that the reference solutions (the self-learner's textbook) hold the
katas alone. This package stays light at its top (no torch, no matplotlib): the `kata` command imports
kata.viz.cli at start-up.
"""
