"""A Figure as a PNG, drawn with matplotlib's object API (no pyplot: no global state, no display needed).

The layout: a header (the title, whose code drew it, in red for the reference, and what to look for),
then the panels in a grid. Heat maps next to each other that share their labels show them once; heat
maps on one colour scale share one colour bar. A reference picture also gets a red frame.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib
import matplotlib.patches
from matplotlib.figure import Figure as MplFigure

from kata.viz.figure import Figure, Heatmap, Lines

DPI = 100
WIDTH_IN = 16.0  # 1600 pixels
# The header, top down, in inches: a margin, the title, whose code drew it, the note on what to look for.
HEADER_TOP, TITLE_IN, WHOSE_IN, NOTE_IN, HEADER_GAP = 0.12, 0.34, 0.23, 0.2, 0.12
WRAP_WHOSE, WRAP_NOTE = 150, 190  # characters per line of the bold whose-line and of the note
# A row of panels is (panel width) * ratio + room for its title and axis labels, in inches.
ROW_HEIGHT = {Heatmap: (0.85, 1.3), Lines: (0.62, 0.8)}
MAX_TICK_LABELS = 30  # more labels than this and the axis gets numbers instead
REFERENCE_RED = "#c62828"
YOURS_GREEN = "#2e7d32"
STYLE = {
    "font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11, "xtick.labelsize": 10, "ytick.labelsize": 10,
    "legend.fontsize": 10, "axes.spines.top": False, "axes.spines.right": False, "axes.titleweight": "bold",
    "figure.facecolor": "white", "savefig.facecolor": "white",
}


def save(figures: list[Figure], folder: Path) -> list[Path]:
    """Draw each figure into folder/<figure.name>.png (the folder is made); return the paths, in order."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    with matplotlib.rc_context(STYLE):
        for figure in figures:
            paths.append(folder / f"{figure.name}.png")
            _draw(figure).savefig(paths[-1], dpi=DPI)
    return paths


def _draw(figure: Figure) -> MplFigure:
    n_rows, n_cols = figure.grid
    panel_width = WIDTH_IN / n_cols
    body = sum(max(panel_width * ROW_HEIGHT[type(p)][0] + ROW_HEIGHT[type(p)][1]
                   for p in figure.panels[r * n_cols:(r + 1) * n_cols]) for r in range(n_rows))
    whose, note = textwrap.wrap(figure.whose, WRAP_WHOSE), textwrap.wrap(figure.look_for, WRAP_NOTE)
    header = HEADER_TOP + TITLE_IN + WHOSE_IN * len(whose) + NOTE_IN * len(note) + HEADER_GAP
    height = header + body
    fig = MplFigure(figsize=(WIDTH_IN, height), dpi=DPI)
    # A margin inside the frame, so that the outer axis labels do not touch it.
    fig.set_layout_engine("constrained", rect=(0.008, 0.006, 0.984, 1 - header / height - 0.006))
    _header(fig, figure, whose, note)
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    images = []
    for i, panel in enumerate(figure.panels):
        row, col = divmod(i, n_cols)
        ax = axes[row][col]
        if isinstance(panel, Heatmap):
            left = figure.panels[i - 1] if col > 0 else None
            below = figure.panels[i + n_cols] if i + n_cols < len(figure.panels) else None
            images.append((ax, panel, _heatmap(ax, panel, _same_rows(left, panel), _same_cols(below, panel))))
        else:
            _lines(ax, panel)
    for ax in axes.flat[len(figure.panels):]:
        ax.set_visible(False)
    _colorbars(fig, images)
    return fig


def _scale(panel) -> tuple | None:
    """What a heat map's colours mean: heat maps with one scale share a colour bar (None: no shared scale)."""
    if not isinstance(panel, Heatmap) or panel.vmin is None or panel.vmax is None:
        return None
    return panel.cmap, panel.vmin, panel.vmax, panel.colorbar


def _header(fig: MplFigure, figure: Figure, whose: list[str], note: list[str]) -> None:
    """The title, whose code drew the picture (green: yours, red: the reference) and the note, top down."""
    height = fig.get_figheight()

    def at(inches: float) -> float:  # figure coordinates of a height measured from the top, in inches
        return 1 - inches / height

    fig.text(0.01, at(HEADER_TOP), figure.title, fontsize=15, fontweight="bold", va="top")
    fig.text(0.01, at(HEADER_TOP + TITLE_IN), "\n".join(whose), fontsize=12, fontweight="bold", va="top",
             color=REFERENCE_RED if figure.reference else YOURS_GREEN, linespacing=1.3)
    fig.text(0.01, at(HEADER_TOP + TITLE_IN + WHOSE_IN * len(whose)), "\n".join(note), fontsize=10.5, va="top",
             color="#333333", linespacing=1.35)
    if figure.reference:
        fig.patches.append(matplotlib.patches.Rectangle((0.002, 0.002), 0.996, 0.996, transform=fig.transFigure,
                                                        fill=False, edgecolor=REFERENCE_RED, linewidth=3))


def _same_rows(left, panel: Heatmap) -> bool:
    """The heat map on the left has these rows and no colour bar of its own between them: label them once."""
    return isinstance(left, Heatmap) and left.rows == panel.rows and left.ylabel == panel.ylabel and (
        left.values.shape[0] == panel.values.shape[0]) and _scale(left) is not None and _scale(left) == _scale(panel)


def _same_cols(below, panel: Heatmap) -> bool:
    return isinstance(below, Heatmap) and below.cols == panel.cols and below.xlabel == panel.xlabel and (
        below.values.shape[1] == panel.values.shape[1])


def _heatmap(ax, panel: Heatmap, hide_rows: bool, hide_cols: bool):
    n_rows, n_cols = panel.values.shape
    # aspect "auto": the panel's box sets the cells' shape (constrained layout misplaces fixed-aspect axes' labels)
    image = ax.imshow(panel.values, cmap=panel.cmap, vmin=panel.vmin, vmax=panel.vmax, interpolation="nearest",
                      aspect="auto")
    ax.set_title(panel.title)
    if panel.rows is not None and n_rows <= MAX_TICK_LABELS:
        ax.set_yticks(range(n_rows), panel.rows if not hide_rows else [""] * n_rows)
    if panel.cols is not None and n_cols <= MAX_TICK_LABELS:
        ax.set_xticks(range(n_cols), panel.cols if not hide_cols else [""] * n_cols, rotation=60, ha="right",
                      rotation_mode="anchor")
    if hide_rows:
        ax.tick_params(left=False)
    else:
        ax.set_ylabel(panel.ylabel)
    if hide_cols:
        ax.tick_params(bottom=False)
    else:
        ax.set_xlabel(panel.xlabel)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    return image


def _colorbars(fig: MplFigure, images: list) -> None:
    """One colour bar for each run of neighbouring heat maps on one scale, at its right; one each otherwise."""
    runs: list[list] = []
    for image in images:
        if runs and _scale(image[1]) is not None and _scale(runs[-1][-1][1]) == _scale(image[1]):
            runs[-1].append(image)
        else:
            runs.append([image])
    for run in runs:
        fig.colorbar(run[0][2], ax=[ax for ax, _, _ in run], shrink=0.85, label=run[0][1].colorbar)


def _lines(ax, panel: Lines) -> None:
    for series in panel.series:
        ax.plot(series.x, series.y, series.style, label=series.label, color=series.color, linewidth=1.8,
                markersize=series.markersize)
    if panel.logy:
        ax.set_yscale("log")
    if panel.ylim is not None:
        ax.set_ylim(*panel.ylim)
    ax.set_title(panel.title)
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)
    ax.grid(True, color="#dddddd", linewidth=0.8)
    ax.legend(frameon=False)
