"""Stubs derived from solutions, exactly as nbgrader's `generate_assignment` derives them.

A solution marks the code a student writes with `### BEGIN SOLUTION` / `### END SOLUTION`. The stub
replaces each region by nbgrader's code stub at the marker's indentation, so the `exercise.py` a
student edits and the notebook nbgrader releases are the same text.
"""

from __future__ import annotations

import re

from kata.course import Course, Kata

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")


class StubError(ValueError):
    """The solution's markers are unbalanced or nested."""


def derive_stub(solution: str, *, filename: str = "solution.py") -> str:
    """The student's version of `solution`: every solution region replaced by the stub."""
    out: list[str] = []
    begin_line = 0
    for number, line in enumerate(solution.split("\n"), start=1):
        if BEGIN in line:
            if begin_line:
                raise StubError(f"{filename}:{number}: {BEGIN} inside the region opened at line {begin_line}")
            begin_line = number
            indent = re.match(r"\s*", line).group(0)
            out.extend(indent + stub for stub in STUB)
        elif END in line:
            if not begin_line:
                raise StubError(f"{filename}:{number}: {END} without {BEGIN}")
            begin_line = 0
        elif not begin_line:
            out.append(line)
    if begin_line:
        raise StubError(f"{filename}:{begin_line}: {BEGIN} is never closed by {END}")
    return "\n".join(out)


def count_regions(solution: str) -> int:
    return sum(BEGIN in line for line in solution.split("\n"))


def strip_markers(solution: str) -> str:
    """The solution as a self-learner reads it: the marker lines removed."""
    return "\n".join(line for line in solution.split("\n") if BEGIN not in line and END not in line)


def stale_stubs(course: Course) -> list[Kata]:
    """The katas whose committed exercise.py is not the stub derived from their solution (`kata stubs`)."""
    return [k for k in course.katas
            if k.exercise.read_text(encoding="utf-8") != derive_stub(k.solution.read_text(encoding="utf-8"))]
