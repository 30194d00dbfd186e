"""A picture as plain data: what `kata.viz.png` draws with matplotlib and `kata.viz.terminal` with rich.

A Figure is a grid of panels, each a Heatmap (a matrix: attention weights, similarities, an encoding
table) or Lines (curves over a shared x axis: norms through the layers, a schedule, a loss), with a
title, the line that says whose code drew it, and a note on what to look for. Values are NumPy arrays,
so both renderers read them alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Colour maps both renderers know: a sequential one for weights in [0, max], a diverging one for values
# around 0 (similarities, the encoding's sines and cosines).
SEQUENTIAL = "viridis"
DIVERGING = "RdBu_r"


@dataclass
class Heatmap:
    """A matrix drawn as coloured cells: rows top to bottom, columns left to right."""

    title: str
    values: np.ndarray  # (n_rows, n_cols)
    ylabel: str
    xlabel: str
    rows: list[str] | None = None  # one label per row (tokens); None: the row numbers
    cols: list[str] | None = None
    vmin: float | None = None  # the colour scale's ends; None: the values' own
    vmax: float | None = None
    cmap: str = SEQUENTIAL
    colorbar: str = ""  # what the colour means


@dataclass
class Series:
    """One curve of a Lines panel."""

    label: str
    x: np.ndarray  # (n,)
    y: np.ndarray  # (n,)
    style: str = "-"  # "-" a line, "--" dashed, ":" dotted, "o-" a line with markers
    color: str | None = None  # a matplotlib colour name; None: the next of the style's cycle
    markersize: float = 4.0


@dataclass
class Lines:
    """Curves over a shared x axis."""

    title: str
    xlabel: str
    ylabel: str
    series: list[Series]
    logy: bool = False
    ylim: tuple[float, float] | None = None  # the y axis' range; None: the data's


@dataclass
class Figure:
    """One picture (one PNG): panels in a grid, `columns` to a row."""

    name: str  # the file's stem: "attention" is written as attention.png
    title: str
    look_for: str  # what the picture shows and what to look for, one or two sentences
    panels: list[Heatmap | Lines]
    columns: int = 0  # panels per row; 0: all in one row
    whose: str = ""  # whose code drew it, set by kata.viz.draw
    reference: bool = False  # drawn by the reference solution, not the student's code

    @property
    def grid(self) -> tuple[int, int]:
        """(rows, columns) of the panel grid."""
        columns = self.columns or len(self.panels)
        return -(-len(self.panels) // columns), columns
