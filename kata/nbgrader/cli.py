"""`kata nbgrader export DIR` for instructors and `kata notebook ID [DIR]` for students."""

from __future__ import annotations

from pathlib import Path

import click

from kata.cli_shared import UsageError, emit, json_option, open_course, render, select_katas


def _require_notebook_tools() -> None:
    """Notebooks need nbformat, which comes with the instructor extras, not with the student's install."""
    try:
        import nbformat  # noqa: F401
    except ImportError:
        raise UsageError("notebooks need the instructor extras (nbformat, nbgrader, ipykernel): "
                          "pip install -c constraints.txt -e \".[instructor]\" in the course folder") from None


@click.group("nbgrader")
def nbgrader_group() -> None:
    """For instructors: the course as an nbgrader course."""


@nbgrader_group.command("export")
@click.argument("dest", type=click.Path(path_type=Path, file_okay=False))
@click.option("--assignment-per-kata", "per_kata", is_flag=True, default=True,
              help="One assignment per kata, named like its folder (9.1-softmax). The default.")
@click.option("--assignment", "assignment", metavar="NAME",
              help="Put every exported kata's notebook into one assignment NAME instead.")
@click.option("--katas", "keys", multiple=True, metavar="IDS",
              help="Only these katas (ids or slugs, comma-separated or repeated). Default: every kata.")
@click.option("--force", is_flag=True, help="Replace exported files that exist with other content.")
@json_option
def export_command(dest: Path, per_kata: bool, assignment: str | None, keys: tuple[str, ...], force: bool,
                   as_json: bool) -> None:
    """Write an nbgrader course into DEST: nbgrader_config.py and source/<assignment>/<kata>.ipynb.

    Each notebook gives the kata's README, the pieces of earlier katas it builds on, the solution in
    solution regions (nbgrader's release is the exercise stub), sanity checks, and a grade cell worth
    the kata's points whose hidden tests run the kata's graders on the student's code.
    """
    _require_notebook_tools()
    from kata.nbgrader.export import ExportError, export_course
    from kata.nbgrader.notebook import NotebookError

    course = open_course()
    katas = select_katas(course, keys)
    try:
        report = export_course(course, dest, katas, assignment=assignment, force=force)
    except (ExportError, NotebookError) as exc:
        raise UsageError(str(exc)) from None
    for warning in report.warnings:
        render.warning(warning)
    if as_json:
        emit("nbgrader-export", report.to_dict())
        return
    render.nbgrader_exported(katas, report)


@click.command("notebook")
@click.argument("kata_id")
@click.argument("dest", required=False, type=click.Path(path_type=Path))
@click.option("--fresh", is_flag=True, help="Start from the stub, not from your exercise.py.")
@click.option("--force", is_flag=True, help="Replace the notebook if it exists.")
def notebook_command(kata_id: str, dest: Path | None, fresh: bool, force: bool) -> None:
    """Write the kata as a Jupyter notebook (into DEST, default the kata's folder beside exercise.py).

    It starts from your exercise.py (or the stub), gives the earlier katas' pieces as code, and its last
    cell runs `kata check` on your code cell.
    """
    _require_notebook_tools()
    from kata.nbgrader.export import ExportError, write_student_notebook

    course = open_course()
    try:
        kata = course.find(kata_id)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    try:
        path = write_student_notebook(course, kata, dest or kata.exercise_dir, fresh=fresh, force=force)
    except ExportError as exc:
        raise UsageError(str(exc)) from None
    render.notebook_written(kata, path)
