"""What a check says, in the course's words: the text the graders' tools (pytest, Hypothesis, torch) write,
rewritten for a student before the report shows it. Plain strings in and out: no rich, no course.

    course_words(message)      Hypothesis's "Failing test case: test_x(x=..., data=data(...)) Draw 1 (dim): 0"
                               becomes "The smallest input that fails: x = ..., dim = 0"; a check named by
                               its pytest id ("during check test_x[cpu-float32]: ...") is named by its title;
                               torch's broadcast error gets the classic cause beside it
    unique_diagnoses(list)     a check's diagnoses, each explanation once: the "Looks like" boxes of `kata check`
    check_feedback(message, diagnoses, status)
                               a failed check's message and its diagnoses as one text, for the reports that
                               are not a terminal (Gradescope, the GitHub Classroom step)
"""

from __future__ import annotations

import re

# Hypothesis notes the example it shrank to: `Failing test case: test_name(` then one `name=value,` per
# argument (values may span lines), `)`, then a `Draw N (label): value` line per value drawn inside the test.
_EXAMPLE = re.compile(r"^(?:Failing test case|Falsifying example): \w+\(\n(?P<args>.*?)^\)\n?"
                      r"(?P<draws>(?:Draw .*\n?)*)", re.MULTILINE | re.DOTALL)
_ARGUMENT = re.compile(r"^    (\w+)=", re.MULTILINE)
_DRAW = re.compile(r"^Draw \d+(?: \(([^)]*)\))?: (.*)$", re.MULTILINE)
_PYTEST_ID = re.compile(r"\(during check [^:\s]+: \"([^\"]*)\"\)")
_BROADCAST = re.compile(r"The size of tensor a \(\d+\) must match the size of tensor b \(\d+\) at non-singleton")
_NAN = re.compile(r"\b\d+ NaN\b")

SMALLEST_INPUT = "The smallest input that fails:"
BROADCAST_CAUSE = ("Two shapes that do not line up in an elementwise operation. The classic cause: a reduction "
                   "(x.sum(dim), x.amax(dim), x.mean(dim)) drops the dimension it reduces, so its result no longer "
                   "lines up with x; keep it with keepdim=True.")
LOOKS_LIKE = "Looks like"  # the heading of a diagnosis: the classic mistake a failure looks like
NAN_CAUSE = ("NaN (not a number) comes from 0/0, ∞ - ∞ or 0·∞: an exp that overflowed to ∞ or underflowed to 0 "
             "in every entry it is divided by, say.")


def course_words(message: str) -> str:
    """`message` as the report shows it to a student (see the module's docstring)."""
    message = _PYTEST_ID.sub(lambda m: f'(during the check "{m.group(1)}")', message)
    message = _EXAMPLE.sub(_smallest_input, message).rstrip()
    if _BROADCAST.search(message):
        message += "\n" + BROADCAST_CAUSE
    if _NAN.search(message):
        message += "\n" + NAN_CAUSE
    return message


def _smallest_input(match: re.Match) -> str:
    """Hypothesis's failing example as `name = value` lines: the test's arguments (not `data`, the handle
    draws are made with), then each value drawn, by its label."""
    args = match.group("args")
    starts = list(_ARGUMENT.finditer(args))
    lines = []
    for start, end in zip(starts, [*starts[1:], None], strict=True):
        name = start.group(1)
        value = args[start.end():end.start() if end else len(args)].rstrip().removesuffix(",")
        if name != "data":
            # Continuation lines (a tensor's rows) stay under the value, which moved right by " = ".
            lines.append(f"    {name} = " + value.replace("\n", "\n" + " " * (len(name) + 3)))
    for number, draw in enumerate(_DRAW.finditer(match.group("draws")), start=1):
        label = draw.group(1) or f"value {number} drawn"
        lines.append(f"    {label} = {draw.group(2)}")
    return "\n".join([SMALLEST_INPUT, *lines]) + "\n"


def unique_diagnoses(diagnoses: list[dict]) -> list[dict]:
    """`diagnoses` (`{"id", "explanation"}`, as a check's result holds them) with each explanation once, in order."""
    seen, out = set(), []
    for diagnosis in diagnoses:
        if diagnosis["explanation"] not in seen:
            seen.add(diagnosis["explanation"])
            out.append(diagnosis)
    return out


def check_feedback(message: str, diagnoses: list[dict], status: str, lines: int | None = None) -> str:
    """What a failed check tells the student, as plain text: its message in the course's words (its first
    `lines` lines, if given), then a "Looks like: ..." line per diagnosis, as `kata check` shows them (never
    grader source: messages are written for students)."""
    said = (course_words(message) if message else status).splitlines()
    if lines is not None and len(said) > lines:
        said = [*said[:lines], f"… {len(said) - lines} more lines"]
    said += [f"{LOOKS_LIKE}: {d['explanation']}" for d in unique_diagnoses(diagnoses)]
    return "\n".join(said)
