"""Gradescope autograders (`kata gradescope build`): a zip Gradescope builds its grading image from, and
what that image runs for each submission (`kata gradescope run`).

The zip holds, at its root (Gradescope's "Autograder Specifications"):

    setup.sh          run once when Gradescope builds the image: Python 3.11+, the CPU build of torch
                      pinned by constraints.txt, and the course, installed into /autograder/venv
    run_autograder    run for each submission: grades /autograder/submission and writes
                      /autograder/results/results.json
    the course        course.toml, kata/, exercises/, solutions/, graders/ (Gradescope keeps the
                      autograder's files from students)

Each kata is graded by `kata.grade.grade_kata`, the unit `kata grade` runs, so a submission gets on
Gradescope exactly the points it gets from `kata grade`. results.json has one test per check (its
points, what it is worth, and as its `output` the check's message and diagnoses, "Looks like: ...", as
`kata check` shows them; never grader source), or one test for the kata when no check could run (no file,
a syntax error, a timeout, a crash: the reason), so the tests' scores add up to the kata's points.

Visibility (`--visibility` at build, carried into run_autograder): a check, or a whole kata, may keep its
details (its points, its message and diagnoses) from the student until after the due date, until the grades
are published, or for good; the student still sees at once that it passed or failed, as otter-grader shows
hidden tests: a visible summary test without points, beside the test itself at the level chosen.

results.json is written before each kata and after the last, so that an autograder stopped on the way (past
the assignment's timeout or memory) still leaves one, the katas it did not finish each a failed test saying so.
Its `extra_data` and its `output` say what the student's process stood in (namespaces, or the user nobody).

Memory: a Gradescope container has 768 MB unless the assignment's settings give it more, and a
grading child that outgrows it would be killed with the whole autograder (no results at all). So each
kata's memory limit is lowered to what the container leaves (its cgroup limit less RESERVE_MB for the
`kata` process), and a submission that needs more gets the kata's "used more than ... of memory"
message; docs/instructors.md gives each kata's measured need.
"""

from __future__ import annotations

import ast
import json
import os
import resource
import shlex
import stat
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from pathlib import Path

from kata import wording
from kata.course import Course, Kata
from kata.grade import GradeError, Submission, grade_kata
from kata.grading import isolation
from kata.runner import GRACE_S, describe_walls
from kata.stubs import strip_markers

RESERVE_MB = 200  # the container's memory kept for the `kata` process itself (it does not import torch)
TIMEOUT_S = 600  # Gradescope's default autograder timeout: past it, the submission gets 0 and no feedback
START_S = 15  # run_autograder's own work (the chmod, starting `kata`) besides the katas' units
ROOT_ENV = "KATA_AUTOGRADER_ROOT"  # where /autograder is (a test runs a temporary tree)
OS_RELEASE_ENV = "KATA_OS_RELEASE"  # the image's os-release file, /etc/os-release unless a test names another
MEMORY_ENV = "KATA_CONTAINER_MEMORY_MB"  # the container's memory, when its cgroup cannot be read
PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # the clone `kata` runs from: what pip installs
PACKAGE_FILES = ("pyproject.toml", "constraints.txt", "README.md")
COURSE_DIRS = ("exercises", "solutions", "graders")
SKIPPED = {"__pycache__", ".pytest_cache", ".kata-backups", ".ipynb_checkpoints"}
LEVELS = ("visible", "after_due_date", "after_published", "hidden")  # Gradescope's visibilities of a test
WHEN = {"after_due_date": "after the due date", "after_published": "once the grades are published",
        "hidden": "to the instructors only"}

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image (with network; grading needs none).
set -euo pipefail
ROOT="${{{root_env}:-/autograder}}"
OS_RELEASE="${{{os_release_env}:-/etc/os-release}}"
cd "$ROOT/source"
export DEBIAN_FRONTEND=noninteractive
echo "kata setup: image $(. "$OS_RELEASE" 2>/dev/null && echo "${{PRETTY_NAME:-${{ID:-}} ${{VERSION_ID:-}}}}" \\
    || echo "unknown (no $OS_RELEASE)")"
apt-get update
if python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    apt-get install -y --no-install-recommends python3-venv python3-pip
    PYTHON=python3
else  # Ubuntu 22.04 images: Python 3.10 is too old for the course
    apt-get install -y --no-install-recommends python3.11 python3.11-venv
    PYTHON=python3.11
fi
# bubblewrap puts each graded unit in a sandbox of its own where the container lets it make namespaces; without
# it, or without namespaces, the student's code still runs walled, as the user nobody. So a failure here is said,
# not fatal. (Each submission's results.json says in extra_data.isolation what its code ran under.)
if apt-get install -y --no-install-recommends bubblewrap; then
    if bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent true; then
        echo "kata setup: bubblewrap installed, and it makes namespaces while the image is built"
    else
        echo "kata setup: bubblewrap installed, but it cannot make namespaces while the image is built (the" \\
             "container may forbid them): where it cannot at grading either, the student's code runs as the user nobody"
    fi
else
    echo "kata setup: bubblewrap could not be installed (apt-get exit code $?): grading goes on without it, the" \\
         "student's code running as the user nobody where the container allows no namespaces" >&2
fi
"$PYTHON" -m venv "$ROOT/venv"
# The CPU build of the torch release constraints.txt pins (no CUDA libraries: smaller, faster to start).
"$ROOT/venv/bin/pip" install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu \\
    --extra-index-url https://pypi.org/simple -c constraints.txt .
"$ROOT/venv/bin/python" -m compileall -q "$ROOT/source/kata"
# Every kata's reference must get full marks in this container, or the image is not built: an autograder
# that would fail correct work never goes live (the message says which kata, and what to raise).
KATA_COURSE="$ROOT/source" KATA_PROGRESS=/tmp/kata-progress.json \\
    "$ROOT/venv/bin/kata" gradescope selfcheck --katas {katas}
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for each submission: /autograder/submission in, /autograder/results/results.json out.
set -euo pipefail
ROOT="${{{root_env}:-/autograder}}"
export KATA_COURSE="${{KATA_COURSE:-$ROOT/source}}"
export KATA_PROGRESS="${{KATA_PROGRESS:-/tmp/kata-progress.json}}"
cd "$ROOT"
# Where the container allows no namespaces, the student's code runs as the user nobody: it must read neither
# the course (graders, reference solutions) nor write the results.
chmod -R go-rwx "$ROOT/source"
mkdir -p "$ROOT/results" && chmod 700 "$ROOT/results"
exec "${{KATA_AUTOGRADER_BIN:-/autograder/venv/bin}}/kata" gradescope run --katas {katas}{visibility} --root "$ROOT"
"""


@dataclass(frozen=True)
class Visibility:
    """When each check's details (its points, message and diagnoses) reach the student: `rules` of (kata id or
    None for every kata, check name pattern or None for every check, level), the most specific rule that
    matches deciding (a check's over its kata's over the default, the later among equals); `visible` if none."""

    rules: tuple[tuple[str | None, str | None, str], ...] = ()

    def level(self, kata_id: str, check_id: str | None = None) -> str:
        """The level of a check (`check_id` as the grading reports it, parameters and all), or of the kata's one
        test when no check ran (`check_id` None: only the kata's and the default rules apply)."""
        name = None if check_id is None else check_id.split("[", 1)[0]
        best, level = -1, "visible"
        for kata, pattern, chosen in self.rules:
            matches = pattern is None or (name is not None and fnmatchcase(name, pattern))
            rank = (kata is not None) + (pattern is not None)
            if kata in (None, kata_id) and matches and rank >= best:
                best, level = rank, chosen
        return level

    def arguments(self) -> str:
        """The rules as `kata gradescope run` arguments, for run_autograder (' --visibility 9.2=hidden')."""
        specs = [f"{'' if kata is None else kata}{'' if pattern is None else ':' + pattern}{'=' if kata else ''}"
                 f"{level}" for kata, pattern, level in self.rules]
        return "".join(f" --visibility {shlex.quote(spec)}" for spec in specs)


def check_names(kata: Kata) -> list[str]:
    """The names of the kata's checks: its graders' test functions (a check's id is one, with its parameters)."""
    names = []
    for path in kata.grader_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
                names.append(node.name)
    return names


def parse_visibility(course: Course, katas: list[Kata], specs: Iterable[str]) -> Visibility:
    """`--visibility` values: LEVEL (every check), KATA=LEVEL, or KATA:CHECK=LEVEL where CHECK is a test function
    of the kata's graders or a pattern of them (`test_grad*`); a GradeError naming what is wrong in one."""
    rules = []
    for spec in specs:
        scope, _, level = spec.rpartition("=")
        if level not in LEVELS:
            raise GradeError(f"--visibility {spec}: the level must be one of {', '.join(LEVELS)}")
        if not scope:
            rules.append((None, None, level))
            continue
        key, _, pattern = scope.partition(":")
        try:
            kata = course.find(key)
        except KeyError as exc:
            raise GradeError(f"--visibility {spec}: {exc.args[0]}") from None
        if kata.id not in {k.id for k in katas}:
            raise GradeError(f"--visibility {spec}: kata {kata.id} is not one of the assignment's katas "
                             f"({', '.join(k.id for k in katas)})")
        names = check_names(kata)
        if pattern and not [n for n in names if fnmatchcase(n, pattern)]:
            raise GradeError(f"--visibility {spec}: no check of kata {kata.id} is named like {pattern!r} (its "
                             f"checks: {', '.join(names)})")
        rules.append((kata.id, pattern or None, level))
    return Visibility(tuple(rules))


def _files(root: Path, folder: str):
    for path in sorted((root / folder).rglob("*")):
        if path.is_file() and not SKIPPED & set(path.relative_to(root).parts) and path.suffix != ".pyc":
            yield path


def worst_case_s(katas: list[Kata]) -> float:
    """The longest run_autograder can take: each kata's unit runs to its time budget and the judge's grace
    (then it is ended), one after another."""
    return START_S + sum(k.time_budget_s + GRACE_S for k in katas)


def check_time(katas: list[Kata], timeout_s: float | None = None, allow_over: bool = False) -> str | None:
    """Whether the katas' worst case fits the assignment's autograder timeout (None: Gradescope's default): a
    GradeError if not (unless `allow_over`, which returns the warning); None if it fits."""
    timeout_s = TIMEOUT_S if timeout_s is None else timeout_s
    worst = worst_case_s(katas)
    if worst <= timeout_s:
        return None
    budgets = ", ".join(f"{k.id} {k.time_budget_s:g}" for k in katas)
    problem = (f"a submission that runs every kata to its time budget takes {worst:g} s on Gradescope (the budgets, "
               f"{budgets} s, each with {GRACE_S:g} s for the judge, and {START_S} s to start), past the "
               f"autograder timeout of {timeout_s:g} s, where Gradescope gives 0 and shows no feedback. Raise "
               "the timeout in the assignment's autograder settings and say so with --timeout, or split the "
               "katas over assignments")
    if not allow_over:
        raise GradeError(f"{problem} (--allow-over-timeout builds it anyway)")
    return problem


def check_one_checkout(course: Course) -> None:
    """A GradeError when the course is another checkout than the one `kata` runs from: the zip would pair
    this `kata/` with that checkout's graders and references (a course folder without `kata/` has only
    this one to go with)."""
    own = course.root / "kata" / "__init__.py"
    if own.is_file() and course.root.resolve() != PACKAGE_ROOT:
        raise GradeError(f"`kata` runs from {PACKAGE_ROOT}, but the course is another checkout, {course.root}: the "
                         "zip would hold the kata package of one and the graders of the other. Build with the "
                         f"course's own `kata` (pip install -e {course.root}, in its environment), or in "
                         f"{PACKAGE_ROOT}")


def build(course: Course, katas: list[Kata], out: Path, visibility: Visibility = Visibility()) -> list[str]:
    """Write the autograder zip of `katas` to `out`, its run_autograder grading with `visibility`; the names it
    holds."""
    check_one_checkout(course)
    ids = ",".join(k.id for k in katas)
    members: list[tuple[str, bytes, int]] = [
        ("setup.sh", SETUP_SH.format(root_env=ROOT_ENV, os_release_env=OS_RELEASE_ENV, katas=ids).encode(), 0o755),
        ("run_autograder", RUN_AUTOGRADER.format(root_env=ROOT_ENV, katas=ids,
                                                 visibility=visibility.arguments()).encode(), 0o755),
    ]
    missing = [name for name in PACKAGE_FILES if not (PACKAGE_ROOT / name).is_file()]
    if missing:
        raise GradeError(f"{', '.join(missing)} not found in {PACKAGE_ROOT}: build the autograder from a clone "
                         "of the course (pip install -e .)")
    members += [(name, (PACKAGE_ROOT / name).read_bytes(), 0o644) for name in PACKAGE_FILES]
    members += [(p.relative_to(PACKAGE_ROOT).as_posix(), p.read_bytes(), 0o644) for p in _files(PACKAGE_ROOT, "kata")]
    members.append(("course.toml", (course.root / "course.toml").read_bytes(), 0o644))
    for folder in COURSE_DIRS:
        members += [(p.relative_to(course.root).as_posix(), p.read_bytes(), 0o644) for p in _files(course.root, folder)]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    tmp.replace(out)
    return [name for name, _, _ in members]


def container_memory_mb() -> int | None:
    """The container's memory limit (cgroup v2, then v1), or $KATA_CONTAINER_MEMORY_MB; None if unlimited."""
    if os.environ.get(MEMORY_ENV):
        return int(os.environ[MEMORY_ENV])
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 50:  # v1 writes a huge number for "no limit"
            return int(text) // (1024 * 1024)
        return None
    return None


def fitted(kata: Kata, container_mb: int | None) -> Kata:
    """The kata with its memory limit lowered to what the container leaves, if that is less."""
    if container_mb is None or kata.memory_mb <= container_mb - RESERVE_MB:
        return kata
    return replace(kata, memory_mb=max(64, container_mb - RESERVE_MB))


def _tests(kata: Kata, grade, visibility: Visibility) -> list[dict]:
    """Gradescope tests of one graded kata: one per check, or one for the kata when no check ran, each as
    `visibility` shows it (`_shown`). A failed check's `output` is its message and its diagnoses, as `kata check`
    shows them."""
    if grade.checks_ran:
        tests = [test for i, c in enumerate(grade.checks, start=1) for test in _shown(
            {"name": f"{kata.id} {kata.title}: {c['title']}", "number": f"{kata.id}.{i}",
             "score": c["points"], "max_score": c["worth"],
             "status": "passed" if c["status"] == "passed" else "failed",
             "output": "passed" if c["status"] == "passed" else
             wording.check_feedback(c["message"], c.get("diagnoses", []), c["status"]), "tags": [kata.id]},
            c["status"], visibility.level(kata.id, c["id"]))]
        if grade.capped_off > 0:  # a failed critical check caps the kata: the tests' scores still add up to it
            # Shown as the (first) critical check that failed is, so that the cap tells nothing it hides.
            first = next((c["id"] for c in grade.checks if c.get("critical") and c["status"] != "passed"), None)
            tests += _shown({"name": f"{kata.id} {kata.title}: cap", "number": f"{kata.id}.cap",
                             "score": -grade.capped_off, "max_score": 0.0, "status": "failed",
                             "output": grade.cap_note(), "tags": [kata.id]}, "capped",
                            visibility.level(kata.id, first))
        return tests
    return _shown({"name": f"{kata.id} {kata.title}", "number": kata.id, "score": grade.points,
                   "max_score": kata.points, "status": "failed", "output": grade.reason(), "tags": [kata.id]},
                  grade.outcome, visibility.level(kata.id))


def _shown(test: dict, word: str, level: str) -> list[dict]:
    """`test` as the student sees it at `level`: itself where visible; otherwise a visible summary (its name and
    `word`, passed or what went wrong, without points or details) beside the test itself at `level`, as
    otter-grader shows hidden tests: a student who may resubmit sees what failed, not why, before the due date."""
    if level == "visible":
        return [{**test, "visibility": "visible"}]
    summary = {"name": test["name"], "number": test["number"], "status": test["status"],
               "output": f"{word}: the details and points are shown {WHEN[level]}", "visibility": "visible",
               "tags": test["tags"]}
    return [summary, {**test, "name": f"{test['name']} (details)", "visibility": level}]


def run(course: Course, katas: list[Kata], root: Path, visibility: Visibility = Visibility()) -> dict:
    """Grade root/submission against `katas` and write root/results/results.json (before each kata too: see
    `_results`); the results."""
    started = time.perf_counter()
    folder = root / "submission"
    submission = Submission("submission", folder, folder if folder.is_dir() else None,
                            "" if folder.is_dir() else f"no submission folder at {folder}")
    memory = container_memory_mb()
    isolate = isolation.probe().available  # where the container allows no sandbox, the container is the one
    grades = []
    for kata in katas:
        _write(root, _results(katas, grades, visibility, started, memory))
        try:
            grades.append(grade_kata(course, fitted(kata, memory), submission, isolate=isolate))
        except Exception as exc:  # the grading's own failure: say so rather than give a silent 0
            raise SystemExit(f"kata {kata.id} could not be graded: {type(exc).__name__}: {exc}") from exc
    return _write(root, _results(katas, grades, visibility, started, memory))


def _results(katas: list[Kata], grades: list, visibility: Visibility, started: float, memory: int | None) -> dict:
    """results.json once `grades` (of the first katas) are done. Each kata not graded yet is a failed test that
    says the autograder stopped in or before it: what Gradescope finds if it stops the autograder there."""
    tests, lines = [], []
    for kata, grade in zip(katas, grades, strict=False):
        tests += _tests(kata, grade, visibility)
        lines.append(f"{kata.id} {kata.title}: {grade.points:.4g} / {kata.points:g} ({grade.outcome})")
    for i, kata in enumerate(katas[len(grades):]):
        when = "while it graded" if i == 0 else "before it graded"
        tests.append({"name": f"{kata.id} {kata.title}", "number": kata.id, "score": 0.0, "max_score": kata.points,
                      "status": "failed", "visibility": "visible", "tags": [kata.id],
                      "output": f"not graded: the autograder was stopped {when} this kata (past the assignment's "
                                "autograder timeout, or out of its memory)"})
        lines.append(f"{kata.id} {kata.title}: not graded")
    ran = {k.id: g for k, g in zip(katas, grades, strict=False) if g.walls}
    walls = sorted({describe_walls(g.walls) for g in ran.values()})
    lines.append(f"Isolation: {'; '.join(walls)}" if walls else "Isolation: no kata's code ran")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
    return {
        "score": round(sum(g.points for g in grades), 4),
        "execution_time": round(time.perf_counter() - started),
        "output": "\n".join(lines),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {"katas": [k.id for k in katas], "container_memory_mb": memory, "peak_child_memory_mb": peak,
                       "isolation": {kid: {"walls": g.walls, "sandbox": g.isolation} for kid, g in ran.items()}},
    }


def _write(root: Path, results: dict) -> dict:
    """Write root/results/results.json whole (a stop mid-write leaves the one before); the results."""
    out = root / "results"
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".results.json.tmp"
    tmp.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(out / "results.json")
    return results


def selfcheck(course: Course, katas: list[Kata], scratch: Path) -> list[str]:
    """Each kata whose reference solution loses points when graded here as a submission is, under the
    limits this container leaves (run by setup.sh: an autograder that would fail correct work is refused)."""
    memory = container_memory_mb()
    folder = scratch / "references"
    folder.mkdir(parents=True, exist_ok=True)
    problems = []
    raise_memory = " raise the autograder's memory in the assignment's Gradescope settings."
    for kata in katas:
        (folder / f"{kata.dirname}.py").write_text(strip_markers(kata.solution.read_text(encoding="utf-8")),
                                                   encoding="utf-8")
        limited = fitted(kata, memory)
        grade = grade_kata(course, limited, Submission("reference", folder, folder),
                           isolate=isolation.probe().available)
        if grade.points != kata.points:
            hint = (f" The container has {memory} MB, which leaves {limited.memory_mb} MB to a grading child:"
                    f"{raise_memory}" if limited is not kata else "")
            problems.append(f"kata {kata.id}: its reference solution gets {grade.points:g} of {kata.points:g} points "
                            f"({grade.outcome}: {' '.join(grade.message.split())[:300]}).{hint}")
    # The judge is not held to a kata's limit (only the student's process is): a container that cannot
    # hold it beside `kata` would be killed whole at grading time, whatever the points above.
    judge = judge_footprint_mb()
    if memory is not None and judge + RESERVE_MB > memory:
        problems.append(f"the judge alone, which imports torch, takes {judge} MB here, which with the {RESERVE_MB} MB "
                        f"kept for `kata` does not fit the container's {memory} MB:{raise_memory}")
    return problems


def judge_footprint_mb() -> int:
    """The resident size of a process that imports what a judge imports before any check, measured here."""
    code = "import resource, torch, pytest; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    return int(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout) // 1024
