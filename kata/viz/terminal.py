"""A Figure in the terminal, with rich: coarse heat maps and sparklines; and the report of `kata viz`.

A heat map is one cell per row and column (averaged into buckets when there are more than fit), each
cell a shade (· ░ ▒ ▓ █, readable without colour) in the colour of its value. A Lines panel is a
table: one sparkline per curve, on one scale per panel, with its first, smallest, largest and last
values. Both fit an 80 to 120 column terminal; rich places panels side by side when there is room.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from rich.color import Color
from rich.columns import Columns
from rich.console import Console, Group
from rich.style import Style
from rich.table import Table
from rich.text import Text

from kata.render import relative
from kata.viz.draw import REFERENCE, Drawing
from kata.viz.figure import DIVERGING, SEQUENTIAL, Figure, Heatmap, Lines

MAX_ROWS, MAX_COLS = 20, 16  # more rows or columns than this are averaged into buckets
CELL = 4  # characters per heat-map column; column labels are cut to CELL - 1
LABEL = 8  # characters of a row label at most
SHADES = "·░▒▓█"
SPARKS = "▁▂▃▄▅▆▇█"
SPARK_WIDTH = 32
# The colour maps of kata.viz.figure as a few RGB stops, interpolated: matplotlib's viridis and RdBu_r.
PALETTES = {
    DIVERGING: ((5, 48, 97), (67, 147, 195), (247, 247, 247), (214, 96, 77), (103, 0, 31)),
    SEQUENTIAL: ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)),
}


def show(console: Console, drawing: Drawing) -> None:
    """Draw every figure of `drawing` in the terminal, then say why it is whose code."""
    for figure in drawing.figures:
        _header(console, figure)
        heatmaps = [_heatmap(p) for p in figure.panels if isinstance(p, Heatmap)]
        if heatmaps:
            console.print(Columns(heatmaps, padding=(1, 3)))
        for panel in figure.panels:
            if isinstance(panel, Lines):
                console.print(_lines(panel))
        console.print()
    _why(console, drawing)


def report(console: Console, drawing: Drawing, written: list[Path]) -> None:
    """What `kata viz` prints after writing the PNGs: whose code drew them, why, and each picture's path."""
    _why(console, drawing)
    for figure, path in zip(drawing.figures, written, strict=True):
        console.print(f"  {figure.name:<20} [cyan]{relative(path)}[/]")


def _why(console: Console, drawing: Drawing) -> None:
    if drawing.whose == REFERENCE:
        console.print(f"[bold red]Kata {drawing.kata.id}: the REFERENCE solution's pictures, not your code.[/] "
                      f"{drawing.why}")
    else:
        console.print(f"[bold green]Kata {drawing.kata.id}: pictures of your own code.[/] {drawing.why}")


def _header(console: Console, figure: Figure) -> None:
    console.rule(Text(figure.title, style="bold"), align="left")
    console.print(Text(figure.whose, style="bold red" if figure.reference else "bold green"))
    console.print(Text(figure.look_for, style="dim"))


def _buckets(n: int, limit: int) -> list[range]:
    """Consecutive index ranges covering 0..n-1, at most `limit` of them, of equal size but the last."""
    size = math.ceil(n / limit)
    return [range(start, min(start + size, n)) for start in range(0, n, size)]


def _colour(t: float, cmap: str) -> Color:
    stops = PALETTES[cmap]
    x = min(max(t, 0.0), 1.0) * (len(stops) - 1)
    i = min(int(x), len(stops) - 2)
    f = x - i
    return Color.from_rgb(*(round(a + (b - a) * f) for a, b in zip(stops[i], stops[i + 1], strict=True)))


def _cell(value: float, lo: float, hi: float, cmap: str, width: int = CELL) -> Text:
    t = 0.5 if hi <= lo else (value - lo) / (hi - lo)
    shade = SHADES[min(int(t * len(SHADES)), len(SHADES) - 1)]
    return Text(shade * width, style=Style(color=_colour(t, cmap)))


def _heatmap(panel: Heatmap) -> Group:
    """The panel as text: a header of column labels, a row label and a cell per (bucket of) row and column."""
    n_rows, n_cols = panel.values.shape
    row_buckets, col_buckets = _buckets(n_rows, MAX_ROWS), _buckets(n_cols, MAX_COLS)
    values = np.array([[panel.values[np.ix_(r, c)].mean() for c in col_buckets] for r in row_buckets])
    lo = panel.vmin if panel.vmin is not None else float(panel.values.min())
    hi = panel.vmax if panel.vmax is not None else float(panel.values.max())
    row_labels = [panel.rows[r.start] if panel.rows and len(r) == 1 else str(r.start) for r in row_buckets]
    col_labels = [panel.cols[c.start] if panel.cols and len(c) == 1 else str(c.start) for c in col_buckets]
    width = min(LABEL, max(len(label) for label in row_labels))
    lines = Text(" " * (width + 1) + "".join(label[:CELL - 1].ljust(CELL) for label in col_labels))
    for label, row in zip(row_labels, values, strict=True):
        lines.append("\n" + label[:width].rjust(width) + " ")
        for value in row:
            lines.append(_cell(float(value), lo, hi, panel.cmap))
    legend = Text(" " * (width + 1))
    for t in np.linspace(0, 1, len(SHADES)):
        legend.append_text(_cell(lo + t * (hi - lo), lo, hi, panel.cmap, width=1))
    legend.append(f" {lo:.3g} to {hi:.3g} {panel.colorbar}")
    axes = f"rows: {panel.ylabel}; columns: {panel.xlabel}"
    if len(row_buckets) < n_rows or len(col_buckets) < n_cols:
        axes += (f" (each cell the mean of {len(row_buckets[0])} x {len(col_buckets[0])}; labels: the first "
                 "index)")
    return Group(Text(panel.title, style="bold"), Text(axes, style="dim"), lines, legend)


def _sparkline(y: np.ndarray, lo: float, hi: float) -> str:
    picks = y[np.linspace(0, len(y) - 1, min(SPARK_WIDTH, len(y))).round().astype(int)]
    scaled = np.zeros_like(picks) if hi <= lo else (picks - lo) / (hi - lo)
    return "".join(SPARKS[min(int(t * len(SPARKS)), len(SPARKS) - 1)] for t in scaled)


def _lines(panel: Lines) -> Table:
    """The panel as a table: a sparkline per curve (one scale for all, log10 for a log axis) and a few values."""
    def scale(y: np.ndarray) -> np.ndarray:
        return np.log10(np.maximum(y, 1e-300)) if panel.logy else y

    everything = np.concatenate([scale(s.y) for s in panel.series])
    lo, hi = float(everything.min()), float(everything.max())
    x = panel.series[0].x
    table = Table(title=Text(panel.title, style="bold"), title_justify="left",
                  caption=f"{panel.xlabel} from {x[0]:g} to {x[-1]:g}; {panel.ylabel}"
                          + (" (log scale)" if panel.logy else ""), caption_justify="left")
    table.add_column("curve")
    table.add_column("shape", no_wrap=True, min_width=SPARK_WIDTH)
    for name in ("first", "min", "max", "last"):
        table.add_column(name, justify="right", no_wrap=True)
    for series in panel.series:
        y = series.y
        table.add_row(series.label, _sparkline(scale(y), lo, hi), f"{y[0]:.3g}", f"{y.min():.3g}", f"{y.max():.3g}",
                      f"{y[-1]:.3g}")
    return table
