"""The grading child process: `python -m kata.grading.child KATA_ID STUDENT_FILE RESULTS_FILE [pytest args]`.

Started by `kata.runner`, never by hand. It runs the kata's graders under pytest with the kata plugin;
everything the parent learns comes through the results file (`kata.grading.protocol`).
"""

from __future__ import annotations

import os
import sys

from kata.course import load_course
from kata.earlier import CURRENT_VARIABLE, MODE_VARIABLE, REFERENCE


def pytest_args(kata, student: str, results: str, extra: list[str]) -> list[str]:
    return [
        str(kata.graders),
        f"--kata-id={kata.id}", f"--kata-student={student}", f"--kata-results={results}",
        "-c", os.devnull,  # the course's own pytest settings are for its test suite, not for graders
        f"--rootdir={kata.graders}",
        "-q", "-s", "--assert=plain",  # plain asserts: a rewritten assert would print grader source
        "-p", "no:cacheprovider", "-p", "no:faulthandler", "-p", "no:warnings",
        *extra,
    ]


def main(argv: list[str]) -> int:
    kata_id, student, results, *extra = argv
    kata = load_course().find(kata_id)
    os.environ[MODE_VARIABLE] = REFERENCE
    os.environ[CURRENT_VARIABLE] = kata.id
    import pytest

    from kata.grading import plugin

    return int(pytest.main(pytest_args(kata, student, results, extra), plugins=[plugin]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
