"""`kata viz ID`: pictures of the student's own code (see `kata.viz`)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from kata.cli_shared import UsageError, emit, find_kata, json_option, open_course, render


@click.command("viz", help="""Pictures of your own code: attention maps, encodings, schedules, training curves.

    Some katas have pictures (asked for one without, this command names those that have). They are drawn
    by your code once the kata passes `kata check`, by the reference solution (and labelled so) until then.
    Writes PNGs and prints their paths; --terminal draws them here instead.""")
@click.argument("kata_id")
@click.option("--terminal", is_flag=True, help="Draw coarse heat maps and sparklines here instead of writing PNGs.")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False),
              help="Write the PNGs into this folder (default: exercises/<kata>/viz/).")
@json_option
def viz_command(kata_id: str, terminal: bool, out: Path | None, as_json: bool) -> None:
    course = open_course()
    kata = find_kata(course, kata_id)
    if not kata.pictures:
        raise UsageError(f"kata {kata.id} has no pictures; these katas do:\n  "
                         + "\n  ".join(f"{k.id}: {k.pictures}" for k in course.with_pictures))
    if terminal and (as_json or out is not None):
        raise UsageError("--terminal draws here: give it without --json and --out")
    from kata import progress as prog
    from kata.student_code import CodeError, use_check_threads
    from kata.viz import draw, png
    from kata.viz import terminal as term

    console = render.make_console(stderr=as_json)
    use_check_threads()
    states = prog.Progress(prog.progress_path(course.root)).load()
    # With --json, whatever the student's code prints goes to stderr: stdout holds the JSON alone.
    quiet = contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext()
    try:
        with console.status(f"drawing kata {kata.id}: {kata.pictures}…"), quiet:
            drawing = draw.draw(course, kata, states)
    except CodeError as exc:
        raise UsageError(f"the reference solution of kata {kata.id} cannot draw (is the course complete?): "
                         f"{exc}") from None
    if terminal:
        term.show(console, drawing)
        return
    written = png.save(drawing.figures, out if out is not None else kata.exercise_dir / "viz")
    if as_json:
        emit("viz", drawing.to_dict(written))
    else:
        term.report(console, drawing, written)
