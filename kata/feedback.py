"""Each student's feedback from `kata grade`: `feedback/<student>.md` and `feedback/<student>.html` in the
output folder, to hand back as they are (the HTML page is self-contained: no scripts, styles inline, no
link to anything outside it).

Per kata: the verdict, the points, and for each failed check its message and its diagnoses ("Looks like
..."), in the words `kata check` shows them (`kata.wording`); for a kata that failed as a whole (no file,
a syntax error, a timeout, a crash), the reason and where. Never grader source: messages are written for
students, and the `where` lines are the student's own file.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path

from kata import runner, wording
from kata.render import OUTCOME_TITLE, points_text

FOLDER = "feedback"
NOT_YET = "Not implemented yet"
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")  # what would format text, link it or open HTML


@dataclass
class _Failure:
    """A failed check as the feedback shows it."""

    title: str
    points: str  # "0 of 0.63 points"
    message: str
    looks_like: list[str]


@dataclass
class _Kata:
    """One kata of one student as the feedback shows it, whatever the format."""

    heading: str  # "9.1 Numerically stable softmax"
    verdict: str  # "failed", "timeout", "not graded yet"
    points: str  # "7.5 of 10 points"
    summary: str = ""  # "12 of 16 checks passed"
    reason: str = ""  # why the kata failed as a whole, when it did
    where: list[str] = field(default_factory=list)
    failures: list[_Failure] = field(default_factory=list)
    not_implemented: list[str] = field(default_factory=list)  # the stub's checks: one line, not a failure each
    passed: list[str] = field(default_factory=list)


def _katas(state, student: str) -> list[_Kata]:
    shown = []
    for kata in state.katas:
        heading = f"{kata.id} {kata.title}"
        grade = state.grades.get((student, kata.id))
        if grade is None:
            shown.append(_Kata(heading, "not graded yet", f"? of {points_text(kata.points)} points"))
            continue
        item = _Kata(heading, OUTCOME_TITLE.get(grade.outcome, grade.outcome),
                     f"{points_text(grade.points)} of {points_text(grade.max_points)} points")
        if not grade.checks_ran:
            item.reason, item.where = wording.course_words(grade.message), grade.where
        else:
            passed = [c for c in grade.checks if c["status"] == runner.PASSED]
            item.summary = f"{len(passed)} of {len(grade.checks)} checks passed"
            if grade.capped_off > 0:  # why the points are fewer than the passed checks are worth
                item.summary += f"; {grade.cap_note()}"
            item.passed = [c["title"] for c in passed]
            item.not_implemented = [c["title"] for c in grade.checks if c["status"] == runner.NOT_IMPLEMENTED]
            item.failures = [
                _Failure(c["title"], f"0 of {points_text(c['worth'])} points",
                         wording.course_words(c["message"]) if c["message"] else c["status"],
                         [d["explanation"] for d in wording.unique_diagnoses(c.get("diagnoses", []))])
                for c in grade.checks if c["status"] not in (runner.PASSED, runner.NOT_IMPLEMENTED)]
        shown.append(item)
    return shown


def _md(text: str) -> str:
    """`text` as Markdown shows it literally (a student's folder name may hold Markdown or HTML)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def _fenced(text: str) -> list[str]:
    """`text` in a fenced block longer than any run of backticks inside it, so nothing in it ends the block."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return [fence + "text", text.rstrip(), fence]


def markdown(state, student: str) -> str:
    """The student's feedback as Markdown."""
    total = f"{points_text(state.student_total(student))} of {points_text(state.max_total)} points"
    lines = [f"# Feedback for {_md(student)}", "", f"**{total}**", ""]
    for kata in _katas(state, student):
        lines += [f"## {_md(kata.heading)}: {kata.verdict}, {kata.points}", ""]
        if kata.reason:
            lines += [*_fenced(kata.reason), ""]
        if kata.where:
            lines += [f"Where: {_md(', '.join(kata.where))}", ""]
        if kata.summary:
            lines += [f"{kata.summary}.", ""]
        for failure in kata.failures:
            lines += [f"### ✗ {_md(failure.title)} ({failure.points})", "", *_fenced(failure.message), ""]
            lines += [f"> **{wording.LOOKS_LIKE}:** {_md(explanation)}\n" for explanation in failure.looks_like]
        if kata.not_implemented:
            lines += [f"{NOT_YET}: " + "; ".join(_md(title) for title in kata.not_implemented) + ".", ""]
        if kata.passed:
            lines += ["Passed: " + "; ".join(_md(title) for title in kata.passed) + ".", ""]
    return "\n".join(lines).rstrip() + "\n"


_STYLE = """body { font: 15px/1.5 system-ui, sans-serif; max-width: 52em; margin: 2em auto; padding: 0 1em; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 1.6em; }
.passed { color: #176f2c; } .failed { color: #a31515; }
pre { background: #f6f6f6; padding: .6em .8em; overflow-x: auto; white-space: pre-wrap; }
.looks-like { border-left: 4px solid #d8a300; background: #fff8e1; padding: .4em .8em; margin: .6em 0; }
.dim { color: #666; }"""


def page(state, student: str) -> str:
    """The student's feedback as one self-contained HTML page."""
    e = html.escape
    total = f"{points_text(state.student_total(student))} of {points_text(state.max_total)} points"
    parts = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
             f"<title>Feedback for {e(student)}</title>", f"<style>\n{_STYLE}\n</style>", "</head>", "<body>",
             f"<h1>Feedback for {e(student)}</h1>", f"<p><strong>{e(total)}</strong></p>"]
    for kata in _katas(state, student):
        mood = "passed" if kata.verdict == OUTCOME_TITLE[runner.PASSED] else "failed"
        parts.append(f'<h2>{e(kata.heading)}: <span class="{mood}">{e(kata.verdict)}</span>, {e(kata.points)}</h2>')
        if kata.reason:
            parts.append(f"<pre>{e(kata.reason)}</pre>")
        if kata.where:
            parts.append(f"<p>Where: {e(', '.join(kata.where))}</p>")
        if kata.summary:
            parts.append(f"<p>{e(kata.summary)}.</p>")
        for failure in kata.failures:
            parts += [f'<h3 class="failed">✗ {e(failure.title)} <span class="dim">({e(failure.points)})</span></h3>',
                      f"<pre>{e(failure.message)}</pre>"]
            parts += [f'<div class="looks-like"><strong>{e(wording.LOOKS_LIKE)}:</strong> {e(explanation)}</div>'
                      for explanation in failure.looks_like]
        if kata.not_implemented:
            parts.append(f'<p class="failed">{NOT_YET}: {e("; ".join(kata.not_implemented))}.</p>')
        if kata.passed:
            parts.append(f'<p class="passed">Passed: {e("; ".join(kata.passed))}.</p>')
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"


def paths(out: Path, student: str) -> tuple[Path, Path]:
    """Where the student's Markdown and HTML feedback go. A student's name is the name of an entry in the
    class folder, so it is a file name already."""
    folder = out / FOLDER
    return folder / f"{student}.md", folder / f"{student}.html"
