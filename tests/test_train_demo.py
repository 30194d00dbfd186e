"""`kata train-demo`: the student's own Transformer learns the copy task, run as the real executable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from kata.stubs import strip_markers
from tests.test_cli import kata_exe


def solve(course, kata_ids=None) -> None:
    """Put the reference solutions in place of the student's exercises."""
    for kata in course.katas:
        if kata_ids is None or kata.id in kata_ids:
            kata.exercise.write_text(strip_markers(kata.solution.read_text()), encoding="utf-8")


def demo(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([kata_exe(), "train-demo", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "COLUMNS": "160"})


@pytest.mark.slow
def test_a_finished_course_learns_the_copy_task(course):
    solve(course)
    result = demo("--json")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary["schema"] == "kata.train-demo/1"
    assert summary["ok"] and summary["reached"] and summary["accuracy"] >= summary["target_accuracy"] == 0.95
    # The live report went to stderr: the bar's fields and the decoded examples.
    assert "tokens/s" in result.stderr and "Held-out examples" in result.stderr and "Held-out accuracy" in result.stderr


def test_an_unfinished_training_kata_is_named_with_its_line(course):
    solve(course, {k.id for k in course.katas if k.id != "9.10"})
    result = demo()
    assert result.returncode == 1
    out = " ".join(result.stdout.split())  # rich wraps long lines
    assert "train-demo stopped" in out and "of kata 9.10 is not implemented yet" in out
    assert "exercises/9.10-training/exercise.py:" in out and "Traceback" not in result.stdout + result.stderr


def test_a_broken_earlier_kata_is_named(course):
    solve(course)
    broken = course.find("9.4").exercise
    broken.write_text(broken.read_text() + "\nraise RuntimeError('half-finished heads')\n")
    result = demo("--json", "--steps", "5")
    assert result.returncode == 1
    summary = json.loads(result.stdout)
    assert not summary["ok"] and summary["accuracy"] is None
    error = summary["error"]
    assert "half-finished heads" in error and "exercises/9.4-multi-head-attention/exercise.py:" in error
    assert "`kata check 9.4`" in error


def test_a_course_with_a_piece_removed_is_a_usage_error(course_root):
    shutil.rmtree(course_root / "graders" / "9.10-training")
    assert demo().returncode == 2
