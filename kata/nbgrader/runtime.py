"""What runs inside a notebook: the grade cell's grading and the student notebook's `kata check`.

Both take the student's code from the kernel's input history (the cells as they were typed, IPython
lines aside), write it to a file with the imports of earlier katas' pieces in front (in the notebook
those pieces are given as code cells), and grade that file exactly as `kata check` grades exercise.py:
`kata.runner` in a child process, under the kata's time budget. An exception, an infinite loop or a
crash in the student's code costs that notebook's points, never the kernel that grades it.

This module is imported in the notebook's kernel, so it stays light: no torch, no nbgrader.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from kata import scoring

# The first line of each kind of cell the notebook builder writes (`kata.nbgrader.notebook`).
SETUP_MARK = "# Setup (read-only)"
GIVEN_MARK = "# Given (read-only)"
YOURS_MARK = "# Your code"
SANITY_MARK = "# Sanity checks (read-only)"
# The import in every grade cell's hidden tests; at autograde only the cells holding it run in the kernel.
GRADE_IMPORT = "from kata.nbgrader.runtime import grade as _kata_grade"

# Set to 1 to grade without the operating-system sandbox where there is none (the student's code then runs
# with the instructor's permissions, and can reach the gradebook).
UNSAFE_VARIABLE = "KATA_UNSAFE_NO_SANDBOX"

_IPYTHON_LINE = re.compile(r"^(\s*)([%!].*)$")
MAX_OUTPUT_LINES = 12


@dataclass
class StudentCode:
    """The student's cells as one Python file: `text`, and where each cell starts in it."""

    text: str
    starts: list[int]  # 1-based line of the file where each cell begins
    header_lines: int

    def where(self, line: int) -> str:
        """A line of the file, told as the student sees it: "your code, line 7" (or "cell 2, line 3")."""
        if line <= self.header_lines or not self.starts:
            return "the imports of earlier katas' pieces"
        index = max(i for i, start in enumerate(self.starts) if start <= line)
        local = line - self.starts[index] + 1
        return f"your code, line {local}" if len(self.starts) == 1 else f"your cell {index + 1}, line {local}"


def _history() -> list[str]:
    """The cells run so far in this kernel, as typed; the running cell last."""
    try:
        from IPython import get_ipython
    except ImportError:
        return []
    shell = get_ipython()
    return list(shell.history_manager.input_hist_raw[1:]) if shell is not None else []


def _first_line(cell: str) -> str:
    return cell.lstrip().split("\n", 1)[0]


def graded_cells(history: list[str]) -> list[str]:
    """The student's cells in a top-to-bottom run (autograde, validate, "Run All"): every cell between
    the last setup or given cell and the sanity checks. Helpers in extra cells there are graded too."""
    cells = history[:-1]  # the running cell is not the student's
    sanity = max((i for i, c in enumerate(cells) if _first_line(c).startswith(SANITY_MARK)), default=None)
    if sanity is None:
        return latest_cell(history)
    before = [i for i, c in enumerate(cells[:sanity]) if _first_line(c).startswith((SETUP_MARK, GIVEN_MARK))]
    start = before[-1] + 1 if before else 0
    return cells[start:sanity]


def latest_cell(history: list[str]) -> list[str]:
    """The latest run of the cell that starts with the "# Your code" line (an interactive session runs
    cells in any order, and again)."""
    for cell in reversed(history[:-1]):
        if _first_line(cell).startswith(YOURS_MARK):
            return [cell]
    return []


def python_only(cell: str) -> str:
    """The cell without IPython's own syntax: `%magic` and `!shell` lines become `pass` (line numbers kept)."""
    return "\n".join(_IPYTHON_LINE.sub(r"\1pass  # IPython line, not graded: \2", line) for line in cell.split("\n"))


def student_file(cells: list[str], imports: list[str], comment: str = "") -> StudentCode:
    """The module that is graded: the earlier katas' imports, then the student's cells in order."""
    header = ([f"# {comment}"] if comment else []) + list(imports)
    lines = list(header)
    starts = []
    for cell in cells:
        if starts and lines[-1].strip():
            lines.append("")  # a blank line between two cells
        starts.append(len(lines) + 1)
        lines.extend(python_only(cell.rstrip("\n")).split("\n"))
    return StudentCode("\n".join(lines) + "\n", starts, len(header))


def locate_course():
    """The course the notebook is graded with: $KATA_COURSE (set by the exported nbgrader_config.py),
    else the folders above the working directory, else the course `kata` was installed from."""
    from kata.course import CourseError, find_course_root, load_course

    try:
        return load_course(find_course_root())
    except CourseError:
        installed = Path(__file__).resolve().parents[2]
        if (installed / "course.toml").is_file():
            return load_course(installed)
        raise


def _checks_line(result) -> str:
    passed = sum(c.passed for c in result.checks)
    return f"{passed} of {len(result.checks)} checks passed" if result.checks else "no check ran"


def report(result, kata, code: StudentCode, student_path: Path, points: float, score: float) -> str:
    """The grade cell's output: each check's title, its points, and for a failure the message and the
    student's own lines. Never grader source: messages are written for students, frames are theirs."""
    from kata import runner
    from kata.grading import protocol

    path = str(student_path)

    def own(text: str) -> str:
        text = re.sub(re.escape(path) + r":(\d+)", lambda m: code.where(int(m.group(1))), text)
        return text.replace(path, "your code")

    lines = [f"Kata {kata.id} ({kata.title}): {score:.4g} of {points:g} points, {_checks_line(result)}."]
    if result.outcome not in (runner.PASSED, runner.FAILED, runner.NOT_IMPLEMENTED):
        lines.append(f"Outcome: {result.outcome}: {own(result.message)}")
        lines.extend(f"    at {code.where(f.line)}: {f.code}" for f in result.frames if f.file == path)
        if result.output.strip():
            lines.append("    your code printed: " + _clip(own(result.output)))
    total = sum(c.weight for c in result.checks) or 1.0
    for check in result.checks:
        worth = points * check.weight / total
        got = worth if check.passed else 0.0
        head = f"  {'✓' if check.passed else '✗'} {check.title}  ({got:.3g} of {worth:.3g})"
        if check.status == protocol.NOT_IMPLEMENTED:
            where = check.frames[-1] if check.frames else None
            lines.append(head + (f": not implemented yet ({code.where(where.line)})" if where else
                                 ": not implemented yet"))
            continue
        lines.append(head)
        if check.passed:
            continue
        if check.message:
            lines.extend("      " + line for line in own(check.message).splitlines())
        for diagnosis in check.diagnoses:
            lines.append(f"      looks like: {diagnosis['id']}: {diagnosis['explanation']}")
        for frame in check.frames[-2:]:
            if frame.file == path:
                lines.append(f"      at {code.where(frame.line)}: {frame.code}")
        if check.output.strip():
            lines.append("      your code printed: " + _clip(own(check.output)))
    if result.capped_off > 0:
        raw = points * sum(c.weight for c in result.checks if c.passed) / total
        lines.append(f"  ! {scoring.cap_note(result.critical_titles())}  (−{raw - score:.3g})")
    if result.checks and result.cuda_available is False:
        lines.append("CUDA not verified: no GPU where this notebook was graded.")
    return "\n".join(lines)


def _clip(text: str) -> str:
    out = text.strip().splitlines()
    more = f"\n        … {len(out) - MAX_OUTPUT_LINES} more lines" if len(out) > MAX_OUTPUT_LINES else ""
    return "\n        ".join(out[:MAX_OUTPUT_LINES]) + more


def score_of(result, points: float) -> float:
    """The points nbgrader records: `points` times the passed checks' weight over the total weight of the
    checks that were to run, capped when a critical check did not pass: `kata.scoring.earned`, the rule
    `kata.runner` applies."""
    passed = sum(c.weight for c in result.checks if c.passed)
    return float(scoring.earned(points, passed, result.total_weight, bool(result.critical_failed)))


def grade(kata_id: str, graders: dict[str, str], *, points: float, imports: list[str] | tuple[str, ...] = (),
          history: list[str] | None = None, timeout: float | None = None) -> float:
    """Grade the notebook's code with `graders` (file name -> source) and return the points earned.

    Called by a grade cell's hidden tests; its value is the cell's last value, which nbgrader takes as
    the cell's score. Prints only the report: any failure of the grading itself is printed as one line
    (a traceback would show the hidden tests), and warnings or stderr writes are swallowed (nbgrader
    scores a cell that writes to stderr as 0).
    """
    from kata import runner
    from kata.grading import isolation

    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            support = isolation.probe()
            unsafe = os.environ.get(UNSAFE_VARIABLE) == "1"
            if not support.available and not unsafe:
                raise OSError(f"grading needs an operating-system sandbox: {support.problem} (or set "
                              f"{UNSAFE_VARIABLE}=1 in nbgrader_config.py to grade without one)")
            course = locate_course()
            kata = course.find(kata_id)
            code = student_file(graded_cells(_history() if history is None else history), list(imports))
            with tempfile.TemporaryDirectory(prefix=f"kata-nbgrader-{kata.id}-") as tmp:
                folder = Path(tmp) / "graders"
                folder.mkdir()
                for name, source in graders.items():
                    (folder / Path(name).name).write_text(source, encoding="utf-8")
                student = Path(tmp) / "exercise.py"
                student.write_text(code.text, encoding="utf-8")
                # Sandboxed: the student's code sees neither the nbgrader folder (gradebook, source
                # notebooks, other submissions) nor anything of the course but what grading needs.
                result = runner.run_kata(course, kata, student, graders=folder, timeout=timeout,
                                         isolate=support.available and not unsafe, credit=not unsafe)
                score = score_of(result, points)
                text = report(result, kata, code, student.resolve(), points, score)
        except Exception as exc:  # the grading's own failure: say so in one line, never a traceback
            print(f"GRADING ERROR (the grader's set-up, not your code): {type(exc).__name__}: {exc}")
            return 0.0
    print(text)
    return score


def check_notebook(kata_id: str, imports: list[str] | tuple[str, ...] = (), *, notebook: str = "") -> None:
    """The student notebook's last cell: write the latest run of the "# Your code" cell to a file beside
    the notebook and run `kata check KATA --file FILE` on it, printing its report."""
    cells = latest_cell(_history())
    if not cells:
        print(f"Run the cell that starts with `{YOURS_MARK}` first: this cell checks its latest run.")
        return
    course = locate_course()
    kata = course.find(kata_id)
    name = Path(notebook).stem if notebook else kata.dirname
    path = Path.cwd() / f"{name}.py"
    comment = (f"The code of {name}.ipynb, written by its last cell for `kata check {kata.id} --file {path.name}`; "
               "the notebook gives the pieces these lines import.")
    code = student_file(cells, list(imports), comment)
    path.write_text(code.text, encoding="utf-8")
    env = dict(os.environ, KATA_COURSE=str(course.root), FORCE_COLOR="1", COLUMNS="110")
    done = subprocess.run([sys.executable, "-m", "kata", "check", kata.id, "--file", str(path)], cwd=course.root,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(done.stdout, end="")
    if code.header_lines:
        print(f"(Line n of {path.name} is line n - {code.header_lines} of your cell: the file starts with "
              "the imports of the given pieces.)")
