"""`kata.earlier`: a kata's imports of earlier pieces resolve to the student's own files, or to the
reference solutions while grading, and never to the graded kata's own reference."""

from __future__ import annotations

import subprocess
import sys

PROBE = "import kata.earlier.softmax as m; print(m.__file__)"


def run(code: str, **env):
    import os

    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            env={**os.environ, **env})
    return result


def test_students_own_file_by_default(course_root):
    result = run(PROBE)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(course_root / "exercises" / "9.1-softmax" / "exercise.py")


def test_reference_solution_while_grading(course_root):
    result = run(PROBE, KATA_EARLIER="reference", KATA_CURRENT="9.3")
    assert result.stdout.strip() == str(course_root / "solutions" / "9.1-softmax" / "solution.py")


def test_a_graded_kata_cannot_import_its_own_reference(course_root):
    result = run(PROBE, KATA_EARLIER="reference", KATA_CURRENT="9.1")
    assert result.returncode != 0
    assert "kata 9.1 cannot import kata.earlier.softmax: only the katas before it are given" in result.stderr


def test_unknown_piece_lists_the_known_ones(course_root):
    result = run("import kata.earlier.flux_capacitor")
    assert "no kata named 'flux_capacitor'" in result.stderr and "softmax" in result.stderr
