"""The `nbgrader_config.py` of an exported course, written from course.toml."""

from __future__ import annotations

import json
import math

from kata.course import Course, Kata
from kata.stubs import STUB

# A grade cell runs the kata's graders under the kata's time budget; this covers the rest (the kernel's
# own start-up, writing the files, starting the grading process).
GRADE_CELL_MARGIN_S = 60


def nbgrader_config(course: Course, katas: list[Kata], grade_cells: dict[str, str]) -> str:
    """The config; `grade_cells` maps each grade cell's nbgrader grade id to the checksum of its exact
    source (`kata.nbgrader.kernel.checksum`): at autograde only those cells run in the kernel."""
    budget_lines = "\n".join(f"    {k.slug!r}: {math.ceil(k.time_budget_s)},  # kata {k.id}" for k in katas)
    return f'''"""nbgrader configuration of "{course.title}".

Written by `kata nbgrader export` from {course.file}. Run the nbgrader commands from this folder, in
the Python environment where `kata` (with its instructor extras) is installed.
"""

import os

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import ClearHiddenTests, GetGrades

c = get_config()  # noqa: F821 (defined by nbgrader when it reads this file)

c.CourseDirectory.course_id = {course.course_id!r}
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))

# The grade cells grade with this course: its course.toml (points, time budgets, forbidden built-ins)
# and its reference solutions. Set KATA_COURSE to grade with a copy somewhere else.
os.environ.setdefault("KATA_COURSE", {str(course.root)!r})

# What nbgrader writes for a solution region: the stub of the course's exercise.py files.
c.ClearSolutions.code_stub = {{"python": {chr(10).join(STUB)!r}}}

# Feedback shows each check's result, never the hidden tests that produced it.
c.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, ClearHiddenTests]

# Seconds a cell may run, from the time budgets in course.toml: a grade cell gets its kata's budget plus
# {GRADE_CELL_MARGIN_S} s for starting up, any other cell its kata's budget.
KATA_TIME_BUDGETS = {{
{budget_lines}
}}
GRADE_CELL_MARGIN_S = {GRADE_CELL_MARGIN_S}


def cell_timeout(cell):
    grade_id = cell.get("metadata", {{}}).get("nbgrader", {{}}).get("grade_id", "")
    slug, _, role = grade_id.partition("_")
    budget = KATA_TIME_BUDGETS.get(slug, max(KATA_TIME_BUDGETS.values()))
    return budget + GRADE_CELL_MARGIN_S if role == "grade" else budget


c.Execute.timeout = max(KATA_TIME_BUDGETS.values())
c.Execute.timeout_func = cell_timeout

# During autograde only the grade cells run in the notebook's kernel: each grades the student's cells
# in a separate, sandboxed process under its kata's time budget, as `kata check` does, so no student code
# can hang, kill or change the kernel, or reach this folder. (Validate, and the students' own runs,
# execute every cell as usual.) A cell is a grade cell when its source is exactly one this export wrote:
# nbgrader grade id -> SHA-256 of the source.
os.environ["KATA_GRADE_CELLS"] = {json.dumps(grade_cells, indent=4, sort_keys=True)!r}
c.Execute.extra_arguments = ["--IPKernelApp.extensions=kata.nbgrader.kernel"]

# Without an operating-system sandbox (bubblewrap) the grade cells refuse to grade. Uncomment to grade
# without one anyway: the students' code would then run with your permissions and could reach this folder.
# os.environ["KATA_UNSAFE_NO_SANDBOX"] = "1"
'''
