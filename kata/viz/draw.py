"""Whose code draws a kata's pictures: the student's when their kata passes, else the reference solution's.

"Passing" is read from the progress file, cheaply: a recorded pass whose hash is the exercise file's
hash now (what `kata verify --progress` checks). A passing kata is drawn by the student's own module,
built on their own earlier pieces (`kata.earlier` resolving to their exercises); if anything of theirs
raises, the reference draws instead and the message names the student's file and line. A kata that is
not passing yet is drawn by the reference solution, built on the reference pieces, and every picture
says so in red.

    drawing = draw(course, course.find("9.4"), Progress(path).load())
    drawing.whose, drawing.why, drawing.figures      # "reference", "your kata 9.4 is not passing yet...", [...]
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kata import earlier
from kata import progress as prog
from kata.course import Course, Kata
from kata.student_code import CodeError, explain, load_kata_file
from kata.viz import pictures as kata_pictures
from kata.viz.figure import Figure

YOURS = "yours"
REFERENCE = "reference"


@dataclass
class Drawing:
    """A kata's pictures and whose code drew them."""

    kata: Kata
    whose: str  # YOURS or REFERENCE
    why: str  # one or two sentences for the student: why this code, and what to do to see theirs
    error: str | None  # what failed in the student's code (their file:line) when the reference stepped in
    figures: list[Figure]

    def to_dict(self, written: list[Path]) -> dict:
        """The kata.viz/1 JSON report; `written` holds each figure's PNG, in order."""
        return {"kata": self.kata.id, "whose": self.whose, "why": self.why, "error": self.error,
                "pictures": [{"name": f.name, "title": f.title, "path": str(path)}
                             for f, path in zip(self.figures, written, strict=True)]}


def whose_code(course: Course, kata: Kata, states: dict[str, prog.KataProgress]) -> tuple[str, str, str]:
    """(YOURS or REFERENCE, why in a sentence or two, why in a few words for the pictures' header)."""
    check = next(iter(prog.verify_passes([kata], states)), None)
    exercise = kata.exercise.relative_to(course.root)
    then = f"once it passes, `kata viz {kata.id}` draws your own code."
    if check is None:
        return (REFERENCE, f"Your kata {kata.id} is not passing yet: `kata check {kata.id}`; {then}",
                f"your kata {kata.id} is not passing yet (kata check {kata.id})")
    if check.verdict == "changed":
        return (REFERENCE, f"{exercise} changed since it passed: `kata check {kata.id}` again; {then}",
                f"{exercise} changed since it passed (kata check {kata.id})")
    if not check.ok:
        return (REFERENCE, f"Your pass of kata {kata.id} is not proven ({check.detail}): `kata check {kata.id}` "
                           f"again; {then}", f"your pass of kata {kata.id} is not proven (kata check {kata.id})")
    return YOURS, f"Your kata {kata.id} passes `kata check`, and {exercise} is the file that passed.", ""


def draw(course: Course, kata: Kata, states: dict[str, prog.KataProgress]) -> Drawing:
    """Build the pictures of `kata` (one with pictures: course.toml's `pictures`) from the right code, labelled.

    Raises CodeError only when the reference solution itself cannot draw (a broken course)."""
    pictures = kata_pictures.load(kata)
    whose, why, short = whose_code(course, kata, states)
    error = None
    if whose == YOURS:
        try:
            figures = _build(course, kata, pictures, own=True)
        except CodeError as exc:
            whose, error = REFERENCE, str(exc)
            why = f"Your kata {kata.id} passes, but {exc}"
            short = str(exc)
    if whose == REFERENCE:
        figures = _build(course, kata, pictures, own=False)
    for figure in figures:
        figure.title = f"Kata {kata.id} · {figure.title}"
        figure.reference = whose == REFERENCE
        figure.whose = (f"REFERENCE solution ({kata.solution.relative_to(course.root)}), not your code: {short}"
                        if figure.reference else
                        f"Your {pictures.subject}: {kata.exercise.relative_to(course.root)}")
    return Drawing(kata, whose, why, error, figures)


def _build(course: Course, kata: Kata, pictures: kata_pictures.KataPictures, *, own: bool) -> list[Figure]:
    """The kata's figures from its exercise (own, on the student's earlier pieces) or its solution (on the
    reference pieces). What the student's code raises comes back as a CodeError naming their file and line."""
    with earlier.resolving(earlier.OWN if own else earlier.REFERENCE):
        module = load_kata_file(course, kata, kata.exercise if own else kata.solution, pictures.needs)
        if not own:
            return pictures.build(module)
        try:
            return pictures.build(module)
        except Exception as exc:
            raise explain(exc, f"drawing with your kata {kata.id} failed", course) from None
