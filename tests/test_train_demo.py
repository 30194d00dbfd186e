"""`kata train-demo`: the student's own Transformer learns a capstone task, run as the real executable; the
reversal task catches a padding-mask mistake the copy task lets through."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import torch

from kata import copy_task
from kata.capstone import TASKS
from kata.stubs import strip_markers
from tests.test_cli import kata_exe

PADDING_MISTAKE = "reversal_encoder_ignores_padding.py"  # graders/9.9-transformer/mistakes/


def solve(course, kata_ids=None) -> None:
    """Put the reference solutions in place of the student's exercises."""
    for kata in course.katas:
        if kata_ids is None or kata.id in kata_ids:
            kata.exercise.write_text(strip_markers(kata.solution.read_text()), encoding="utf-8")


def demo(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([kata_exe(), "train-demo", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "COLUMNS": "160"})


@pytest.mark.slow(seconds=20)
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


def test_the_tasks_are_listed_once_and_the_copy_task_stays_the_default():
    assert list(TASKS) == ["copy", "reverse"] and copy_task.TASK is TASKS["copy"]


def test_the_reversal_task_reverses_and_pads_its_evaluations_wider():
    task = TASKS["reverse"]
    src, tgt = copy_task.make_batch(task, 64, torch.Generator().manual_seed(3))
    copy_src, copy_tgt = copy_task.make_batch(copy_task.TASK, 64, torch.Generator().manual_seed(3))
    assert torch.equal(src, copy_src)  # the same sources from the same stream; only the target differs
    for row in range(64):
        symbols = [t for t in src[row].tolist() if t != copy_task.PAD_ID]
        assert copy_task.format_tokens(tgt[row]).split() == ["<bos>", *map(str, symbols[::-1]), "<eos>"]
        assert copy_task.format_tokens(copy_tgt[row]).split() == ["<bos>", *map(str, symbols), "<eos>"]
    assert src.size(1) == task.max_len  # training batches: as wide as the longest sequence can be
    heldout, _ = copy_task.heldout_set(task, 0)
    validation, _ = copy_task.validation_set(task, 0)
    assert heldout.size(1) == validation.size(1) == task.max_len + task.eval_padding == task.max_len + 4
    assert (heldout[:, task.max_len:] == copy_task.PAD_ID).all()
    assert copy_task.heldout_set(copy_task.TASK, 0)[0].size(1) == copy_task.TASK.max_len


def test_an_unknown_task_is_a_usage_error(course_root):
    result = demo("--task", "sort")
    assert result.returncode == 2 and "'sort' is not one of 'copy', 'reverse'" in result.stderr


@pytest.mark.slow(seconds=20)
def test_a_finished_course_learns_the_reversal_task(course):
    solve(course)
    result = demo("--json", "--task", "reverse")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary["task"] == "reverse" and summary["reached"] and summary["accuracy"] >= 0.95
    assert "The reverse task" in result.stderr


@pytest.mark.slow(seconds=20)
def test_a_padding_mask_mistake_fails_the_reversal_task_that_the_copy_task_lets_through(course):
    """9.9 with the planted mistake (its encoder ignores the source padding mask): the copy task, evaluated
    as it was trained, still learns; the reversal task, whose evaluations carry more padding, does not."""
    solve(course)
    transformer = course.find("9.9")
    transformer.exercise.write_text(
        transformer.exercise.read_text() + "\n\n" + (transformer.mistakes_dir / PADDING_MISTAKE).read_text(),
        encoding="utf-8")
    copied = demo("--json", "--task", "copy")
    assert copied.returncode == 0, copied.stderr[-3000:]
    assert json.loads(copied.stdout)["reached"]
    reversed_ = demo("--json", "--task", "reverse")
    assert reversed_.returncode == 1, reversed_.stderr[-3000:]
    summary = json.loads(reversed_.stdout)
    assert summary["ok"] and not summary["reached"] and summary["accuracy"] < 0.8
    report = " ".join(reversed_.stderr.split())
    assert "4 more pad columns than training had" in report and "`kata check 9.9`" in report
