"""A generated class for the grading benchmarks: each student hands in, for each kata, the reference
solution, the untouched stub, or the solution with one of the kata's planted mistakes, drawn with a
fixed seed. The same class can be written as plain files (for `kata grade`) and as nbgrader submissions
(the released notebooks with the same code in their answer cell).
"""

from __future__ import annotations

import random
from pathlib import Path

from kata.cli_shared import select_katas
from kata.course import Course, Kata
from kata.stubs import strip_markers
from kata.verify import with_mistake

KINDS = (("reference", 0.5), ("mistake", 0.3), ("stub", 0.2))


def planned_class(course: Course, katas: str, n_students: int, seed: int = 0) -> tuple[list[Kata], dict]:
    """The katas named on a benchmark's command line (comma-separated ids, or "all") and a class for them."""
    chosen = select_katas(course, () if katas == "all" else (katas,))
    return chosen, plan_class(course, chosen, n_students, seed)


def plan_class(course: Course, katas: list[Kata], n_students: int, seed: int = 0) -> dict[str, dict[str, str]]:
    """student -> kata id -> "reference", "stub" or "mistake:<file name>"."""
    rng = random.Random(seed)
    plan = {}
    for i in range(1, n_students + 1):
        choices = {}
        for kata in katas:
            kind = rng.choices([k for k, _ in KINDS], weights=[w for _, w in KINDS])[0]
            if kind == "mistake":
                kind = f"mistake:{rng.choice(kata.mistakes()).name}"
            choices[kata.id] = kind
        plan[f"student{i:02d}"] = choices
    return plan


def mistake_source(kata: Kata, kind: str) -> str:
    return (kata.mistakes_dir / kind.removeprefix("mistake:")).read_text(encoding="utf-8")


def exercise_file(kata: Kata, kind: str) -> str:
    """The exercise.py a student with this `kind` of answer hands in."""
    if kind == "stub":
        return kata.exercise.read_text(encoding="utf-8")
    solution = kata.solution.read_text(encoding="utf-8")
    if kind == "reference":
        return strip_markers(solution)
    return with_mistake(solution, mistake_source(kata, kind), kind.removeprefix("mistake:"))


def write_files(course: Course, plan: dict[str, dict[str, str]], folder: Path) -> None:
    """The class as `kata grade` reads it: a clone-like folder per student."""
    for student, choices in plan.items():
        for kata_id, kind in choices.items():
            kata = course.find(kata_id)
            path = folder / student / "exercises" / kata.dirname / "exercise.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(exercise_file(kata, kind), encoding="utf-8")


def write_notebooks(course: Course, plan: dict[str, dict[str, str]], nbgrader_root: Path) -> None:
    """The class as nbgrader's submitted/ folder: each released notebook, its answer cell holding the
    same code (the source notebook's solution cell, with the planted mistake appended), or untouched."""
    import nbformat

    for student, choices in plan.items():
        for kata_id, kind in choices.items():
            kata = course.find(kata_id)
            name = f"{kata.dirname}.ipynb"
            notebook = nbformat.read(nbgrader_root / "release" / kata.dirname / name, as_version=4)
            source = nbformat.read(nbgrader_root / "source" / kata.dirname / name, as_version=4)
            answers = [c.source for c in source.cells if c.metadata.get("nbgrader", {}).get("solution")]
            cells = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("solution")]
            if kind != "stub":
                for cell, answer in zip(cells, answers, strict=True):
                    cell.source = answer
                if kind.startswith("mistake:"):
                    cells[-1].source += "\n\n\n" + mistake_source(kata, kind)
            target = nbgrader_root / "submitted" / student / kata.dirname / name
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook, target)
