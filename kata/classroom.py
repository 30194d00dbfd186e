"""GitHub Classroom autograding (`kata classroom workflow`): the `.github/workflows/classroom.yml` of the
assignment's template repository, and what each of its steps runs (`kata classroom grade KATA`).

GitHub Classroom's current convention (classroom-resources): one step per test, each leaving a base64
JSON result in its `result` output, then `classroom-resources/autograding-grading-reporter`, which
reads each step's result from the environment variable `<STEP ID>_RESULTS` (its `runners` input lists
the step ids), prints a table of the points (each runner's count of passed tests over its tests, times
its `max_score`) and a notice, "Points X/Y", that adds up the tests' `score`s and the runners'
`max_score`s and is what Classroom records. The result is what `autograding-command-grader` emits:

    {"version": 1, "status": "pass" | "fail" | "error", "max_score": 10,
     "tests": [{"name", "status", "score", "message", "test_code", "filename", "line_no", "duration"}]}

The command grader scores a step all or nothing (`max-score` when the command exits 0), so each kata's
step here runs `kata classroom grade` instead, which grades the kata with `kata.grade.grade_kata` (the
unit `kata grade` runs) and emits the same result with tests of its checks (`result`: the table and the
notice then give the same points, the student's `kata grade` points), each failed one with its message and
diagnoses; its own log, the step's in the job, says the kata's verdict and points, then each check, a failed
one with its message and diagnoses ("Looks like: ..."), or why no check ran (a timeout, say).
"""

from __future__ import annotations

import base64
import json
import math
import re
from fractions import Fraction
from pathlib import Path

from kata import runner, scoring, wording
from kata.course import Course, Kata
from kata.grade import Submission, grade_kata
from kata.grading import isolation
from kata.render import OUTCOME_TITLE

WORKFLOW = Path(".github") / "workflows" / "classroom.yml"
PYTHON = "3.11"
REPORTER = "classroom-resources/autograding-grading-reporter@v1"


def step_id(kata: Kata) -> str:
    """A step id GitHub accepts (letters, digits, - and _) whose upper-cased form names the reporter's
    environment variable: kata-9-10 -> KATA-9-10_RESULTS."""
    return "kata-" + re.sub(r"[^A-Za-z0-9_-]", "-", kata.id)


def result(kata: Kata, grade) -> dict:
    """The command grader's result for one graded kata: tests of the checks, or one for the kata when no
    check could run (no file, a syntax error, a timeout, a crash), named with what happened.

    The reporter's table scores a step by its count of passed tests, (passed / tests) * max_score, and its
    notice adds up the tests' scores. So that both give the kata's points, a check is as many tests as its
    weight holds of the smallest weight unit (a check of weight 2 beside checks of weight 1 is two), and the
    kata's score, computed as the table computes it, rides on its first passed test: the notice then adds the
    very floats the table adds. A score capped by a failed critical check gets failed tests of the cap, as many
    as bring the share of passed tests down to the cap."""
    milliseconds = round(grade.seconds * 1000)
    if not grade.checks_ran:
        what = OUTCOME_TITLE.get(grade.outcome, grade.outcome)
        tests = [{"name": f"{kata.id} {kata.title} ({what})", "status": "error" if grade.outcome ==
                  runner.INTERNAL_ERROR else "fail", "score": grade.points, "message": grade.reason(),
                  "test_code": "", "filename": grade.file or "", "line_no": 0, "duration": milliseconds}]
    else:
        weights = [Fraction(c.get("weight", 1.0)).limit_denominator(1000) for c in grade.checks]
        denominator = math.lcm(*(w.denominator for w in weights))
        counts = [int(w * denominator) for w in weights]
        step = math.gcd(*counts)  # the largest weight that every check's weight counts a whole number of
        units = [count // step for count in counts]
        # A failed critical check caps the score at a share n/d of the points (`kata.scoring`): failed tests of
        # the cap are added so that passed / tests is n/d, every unit counted `repeat` times to keep it whole.
        cap, passed_units, extra, repeat = Fraction(scoring.CRITICAL_CAP).limit_denominator(1000), 0, 0, 1
        if grade.capped_off > 0:
            passed_units = sum(u for c, u in zip(grade.checks, units, strict=True) if c["status"] == runner.PASSED)
            repeat = cap.numerator // math.gcd(passed_units * cap.denominator, cap.numerator)
            extra = passed_units * repeat * cap.denominator // cap.numerator - sum(units) * repeat
        tests = []
        for check, count in zip(grade.checks, units, strict=True):
            passed = check["status"] == runner.PASSED
            count *= repeat
            message = "" if passed else wording.check_feedback(check["message"], check.get("diagnoses", []),
                                                               check["status"])
            tests += [{"name": f"{kata.id} {check['title']}" + (f" [{i} of {count}]" if count > 1 else ""),
                       "status": "pass" if passed else "fail", "score": 0, "message": message, "test_code": "",
                       "filename": grade.file or "", "line_no": 0, "duration": 0} for i in range(1, count + 1)]
        tests += [{"name": f"{kata.id} cap" + (f" [{i} of {extra}]" if extra > 1 else ""), "status": "fail",
                   "score": 0, "message": grade.cap_note(), "test_code": "", "filename": grade.file or "",
                   "line_no": 0, "duration": 0} for i in range(1, extra + 1)]
        # The grading child does not time checks one by one: the kata's time is in the first test.
        tests[0]["duration"] = milliseconds
        passing = [t for t in tests if t["status"] == "pass"]
        if passing:
            passing[0]["score"] = len(passing) / len(tests) * kata.points
    status = "pass" if grade.outcome == runner.PASSED else "error" if grade.outcome == runner.INTERNAL_ERROR else "fail"
    return {"version": 1, "status": status, "max_score": kata.points, "tests": tests}


def grade_step(course: Course, kata: Kata, folder: Path):
    """Grade the kata in the student's repository `folder`; the grade, its result and the result's
    `result=<base64>` output line."""
    # On a runner whose kernel allows no user namespaces (Ubuntu 24.04's AppArmor) the job's VM is the sandbox.
    grade = grade_kata(course, kata, Submission(folder.name, folder, folder), isolate=isolation.probe().available)
    data = result(kata, grade)
    return grade, data, "result=" + base64.b64encode(json.dumps(data).encode()).decode()


def _quoted(text: str) -> str:
    return json.dumps(text)  # a JSON string is a YAML double-quoted scalar


def workflow(course: Course, katas: list[Kata], *, course_repo: str | None = None,
             course_ref: str | None = None) -> str:
    """The workflow's YAML text. With `course_repo`, the course (graders, references) is checked out from
    that repository (at `course_ref`) rather than used from the student's own copy, which the student
    can edit."""
    ids = [step_id(k) for k in katas]
    minutes = max(5, int(sum(k.time_budget_s for k in katas) * 2 / 60) + 10)  # every budget twice, and setup
    course_path = "${{ github.workspace }}" + ("/.kata-course" if course_repo else "")
    lines = [
        f"# GitHub Classroom autograding of {course.title}: {', '.join(k.id for k in katas)}.",
        "# Written by `kata classroom workflow`; each kata's step grades it exactly as `kata grade` does and",
        "# gives each check its points; the reporter adds them up for Classroom.",
        "name: Autograding Tests",
        '"on":',
        "  - push",
        "  - repository_dispatch",
        "permissions:",
        "  checks: write",
        "  actions: read",
        "  contents: read",
        "jobs:",
        "  run-autograding-tests:",
        "    runs-on: ubuntu-latest",
        "    if: github.actor != 'github-classroom[bot]'",
        f"    timeout-minutes: {minutes}",
        "    env:",
        f"      KATA_COURSE: {_quoted(course_path)}",
        "      KATA_PROGRESS: /tmp/kata-progress.json",
        "    steps:",
        "      - name: Checkout code",
        "        uses: actions/checkout@v4",
    ]
    if course_repo:
        lines += [
            "      - name: Checkout the course (graders and references the student cannot change)",
            "        uses: actions/checkout@v4",
            "        with:",
            f"          repository: {_quoted(course_repo)}",
            *([f"          ref: {_quoted(course_ref)}"] if course_ref else []),
            "          path: .kata-course",
            "          token: ${{ secrets.KATA_COURSE_TOKEN || github.token }}",
        ]
    lines += [
        "      - name: Set up Python",
        "        uses: actions/setup-python@v5",
        "        with:",
        f"          python-version: {_quoted(PYTHON)}",
        "      - name: Install the course (the CPU build of torch, as constraints.txt pins it)",
        '        run: python -m pip install --extra-index-url https://download.pytorch.org/whl/cpu '
        '-c "$KATA_COURSE/constraints.txt" -e "$KATA_COURSE"',
    ]
    for kata, ident in zip(katas, ids, strict=True):
        lines += [
            f"      - name: {_quoted(f'{kata.id} {kata.title} ({kata.points:g} points)')}",
            f"        id: {ident}",
            f"        timeout-minutes: {max(2, int(kata.time_budget_s * 2 / 60) + 1)}",
            f'        run: kata classroom grade {kata.id} >> "$GITHUB_OUTPUT"',
        ]
    lines += [
        "      - name: Autograding Reporter",
        f"        uses: {REPORTER}",
        "        if: always()",
        "        env:",
        *[f"          {ident.upper()}_RESULTS: \"${{{{ steps.{ident}.outputs.result }}}}\"" for ident in ids],
        "        with:",
        f"          runners: {','.join(ids)}",
    ]
    return "\n".join(lines) + "\n"


def write_workflow(course: Course, katas: list[Kata], repository: Path, **options) -> Path:
    path = repository / WORKFLOW
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(workflow(course, katas, **options), encoding="utf-8")
    return path
