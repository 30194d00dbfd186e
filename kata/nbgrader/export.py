"""`kata nbgrader export`: the course as an nbgrader course folder.

    DIR/nbgrader_config.py                       course id, time limits, feedback without hidden tests
    DIR/source/<assignment>/<id>-<slug>.ipynb    one source notebook per kata

One assignment per kata (named like the kata's folder, `9.1-softmax`) unless the katas are grouped
into one assignment. Nothing else goes into `source/<assignment>/`: nbgrader releases every file
there to students, and the graders travel only inside the notebooks' hidden tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from kata.course import Course, Kata
from kata.nbgrader.config import nbgrader_config
from kata.nbgrader.kernel import checksum
from kata.nbgrader.notebook import NotebookError, build_notebook, given_katas

CONFIG_FILE = "nbgrader_config.py"
SOURCE_DIR = "source"
_ASSIGNMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class ExportError(ValueError):
    """The export would overwrite changed files, or was asked for something it cannot write."""


@dataclass
class Export:
    root: Path
    assignments: dict[str, list[str]] = field(default_factory=dict)  # assignment -> its notebooks' kata ids
    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    gives: dict[str, list[str]] = field(default_factory=dict)  # assignment -> earlier katas whose reference it gives
    warnings: list[str] = field(default_factory=list)  # what releasing the assignments would hand out

    def to_dict(self) -> dict:
        return {"root": str(self.root), "assignments": self.assignments,
                "written": [str(p) for p in self.written], "unchanged": [str(p) for p in self.unchanged],
                "gives_references": self.gives, "warnings": self.warnings}


def assignment_plan(katas: list[Kata], assignment: str | None = None) -> dict[str, list[Kata]]:
    """Which notebooks go into which assignment: one per kata, or all of them into `assignment`."""
    if assignment is None:
        return {k.dirname: [k] for k in katas}
    if not _ASSIGNMENT.match(assignment):
        raise ExportError(f"assignment name {assignment!r}: use letters, digits, '.', '_' or '-'")
    return {assignment: list(katas)}


def given_references(course: Course, plan: dict[str, list[Kata]]) -> dict[str, list[Kata]]:
    """The earlier katas whose reference solutions each assignment's notebooks give as code (in course order):
    releasing the assignment hands out those katas' answers."""
    gives = {}
    for name, members in plan.items():
        ids = {k.id for member in members for k in given_katas(course, member)}
        if ids:
            gives[name] = [k for k in course.katas if k.id in ids]
    return gives


def release_warnings(plan: dict[str, list[Kata]], gives: dict[str, list[Kata]]) -> list[str]:
    """What an instructor must know before releasing: which assignment carries which earlier kata's answer,
    and so may be released only after that kata's deadline (or never, when it is graded in the same one)."""
    holder = {k.id: name for name, members in plan.items() for k in members}
    lines = []
    for name, earlier in gives.items():
        inside = [k for k in earlier if holder.get(k.id) == name]
        before = [k for k in earlier if holder.get(k.id) != name]
        if before:
            named = ", ".join(f"{k.id} ({holder.get(k.id, 'not in this export')})" for k in before)
            whose = "that kata's deadline" if len(before) == 1 else "the deadlines of those katas"
            lines.append(f"{name} gives the reference solution of kata {named} as code: release it only after "
                         f"{whose}")
        if inside:
            lines.append(f"{name} gives the reference solution of kata {', '.join(k.id for k in inside)}, which "
                         "it also grades: its students get that answer with the kata; export with one assignment "
                         "per kata instead (no --assignment)")
    return lines


def notebook_path(assignment: str, kata: Kata) -> Path:
    return Path(SOURCE_DIR) / assignment / f"{kata.dirname}.ipynb"


def render(course: Course, katas: list[Kata] | None = None, assignment: str | None = None) -> dict[Path, str]:
    """Every file of the export, by path relative to its folder, as text."""
    katas = list(course.katas) if katas is None else list(katas)
    if not katas:
        raise ExportError("no kata to export")
    files: dict[Path, str] = {}
    grade_cells: dict[str, str] = {}  # nbgrader grade id -> checksum of the grade cell's exact source
    for name, members in assignment_plan(katas, assignment).items():
        for kata in members:
            notebook = build_notebook(course, kata, nbgrader=True)
            for cell in notebook.cells:
                meta = cell.get("metadata", {}).get("nbgrader", {})
                if meta.get("grade") and not meta.get("solution") and cell.cell_type == "code":
                    grade_cells[meta["grade_id"]] = checksum(cell.source)
            files[notebook_path(name, kata)] = nbformat.writes(notebook) + "\n"
    return {Path(CONFIG_FILE): nbgrader_config(course, katas, grade_cells), **files}


def export_course(course: Course, dest: Path, katas: list[Kata] | None = None, *, assignment: str | None = None,
                  force: bool = False) -> Export:
    """Write the nbgrader course into `dest`. Files that exist with other content are only replaced with
    `force` (an instructor may have edited the config; nbgrader refuses changed grade cells once students
    have submitted)."""
    katas = list(course.katas) if katas is None else list(katas)
    dest = Path(dest).resolve()
    files = render(course, katas, assignment)
    changed = [path for path, text in files.items()
               if (dest / path).is_file() and (dest / path).read_text(encoding="utf-8") != text]
    if changed and not force:
        listed = "\n  ".join(str(dest / p) for p in changed)
        raise ExportError(f"these files exist with other content (add --force to replace them):\n  {listed}")
    plan = assignment_plan(katas, assignment)
    gives = given_references(course, plan)
    report = Export(dest, {name: [k.id for k in members] for name, members in plan.items()},
                    gives={name: [k.id for k in earlier] for name, earlier in gives.items()},
                    warnings=release_warnings(plan, gives))
    for path, text in files.items():
        target = dest / path
        if target.is_file() and target.read_text(encoding="utf-8") == text:
            report.unchanged.append(target)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        report.written.append(target)
    return report


def write_student_notebook(course: Course, kata: Kata, dest: Path, *, fresh: bool = False,
                           force: bool = False) -> Path:
    """`kata notebook`: the kata as a notebook for a student, starting from their exercise.py (or the stub
    with `fresh`), ending with a cell that runs `kata check` on their code."""
    dest = Path(dest)
    target = dest / f"{kata.dirname}.ipynb" if dest.suffix != ".ipynb" else dest
    if target.exists() and not force:
        raise ExportError(f"{target} exists: it may hold your work (add --force to replace it)")
    code = None if fresh or not kata.exercise.is_file() else kata.exercise.read_text(encoding="utf-8")
    try:
        notebook = build_notebook(course, kata, nbgrader=False, code=code, name=target.name)
    except NotebookError as exc:
        if code is None:
            raise
        raise ExportError(f"{exc}\n(your exercise.py starts the notebook: fix it, or add --fresh to start "
                          "from the stub)") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")
    return target
