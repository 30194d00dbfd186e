"""`kata.earlier`: a kata's imports of earlier pieces resolve to the student's own files, or to the
reference solutions while grading, and never to the graded kata's own reference."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

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


def test_the_course_is_read_once_and_again_when_it_changes(course_root):
    # A grading unit resolves up to eight pieces: one read of course.toml, not eight. A long-lived process
    # (a notebook's kernel) sees an edit: here course.toml broken, so the pieces come from the installed course.
    result = run("import kata.earlier as earlier\n"
                 "reads = []\n"
                 "read = earlier.load_course\n"
                 "earlier.load_course = lambda root: reads.append(root) or read(root)\n"
                 "import kata.earlier.softmax, kata.earlier.layer_norm, kata.earlier.attention\n"
                 "print(len(reads))\n"
                 "open('course.toml', 'a').write('not [valid toml\\n')\n"
                 "import kata.earlier.feed_forward as piece\n"
                 "print(len(reads), piece.__file__)\n")
    assert result.returncode == 0, result.stderr
    once, after = result.stdout.splitlines()
    assert once == "1"
    assert after == f"3 {REPO / 'exercises' / '9.5-feed-forward' / 'exercise.py'}"  # the broken read, the installed
