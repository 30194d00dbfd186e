"""Shared fixtures: a private copy of the course, so tests never touch the repository's files."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from kata.course import Course, load_course

REPO = Path(__file__).resolve().parents[1]
COURSE_PARTS = ("course.toml", "exercises", "solutions", "graders")


def copy_course(target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for part in COURSE_PARTS:
        source = REPO / part
        if source.is_dir():
            shutil.copytree(source, target / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target / part)
    return target


@pytest.fixture
def course_root(tmp_path, monkeypatch) -> Path:
    """A copy of the course in a temporary folder, with KATA_COURSE and KATA_PROGRESS pointing into it."""
    root = copy_course(tmp_path / "course")
    monkeypatch.setenv("KATA_COURSE", str(root))
    monkeypatch.setenv("KATA_PROGRESS", str(root / ".kata-progress.json"))
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def course_outside_tmp(monkeypatch) -> Course:
    """A copy of the course where a student keeps one, outside /tmp, located as `course_root` is. (The student's
    process has a /tmp of its own: a course under the machine's /tmp, as `course_root` is, is not there at all
    for it, and neither is anything else the tests keep under /tmp.)"""
    folder = Path(tempfile.mkdtemp(prefix="kata-test-", dir="/var/tmp"))
    try:
        root = copy_course(folder / "course")
        monkeypatch.setenv("KATA_COURSE", str(root))
        monkeypatch.setenv("KATA_PROGRESS", str(root / ".kata-progress.json"))
        monkeypatch.chdir(root)
        yield load_course(root)
    finally:
        shutil.rmtree(folder)


@pytest.fixture
def course(course_root) -> Course:
    return load_course(course_root)


@pytest.fixture
def softmax_file(course_root):
    """Write a student's softmax exercise and return its path."""

    def write(body: str, name: str = "exercise.py") -> Path:
        path = course_root / "exercises" / "9.1-softmax" / name
        path.write_text(body, encoding="utf-8")
        return path

    return write


CORRECT_SOFTMAX = '''import torch


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)
'''


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie waiting to be reaped."""
    state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout.strip()
    return bool(state) and not state.startswith("Z")


def children_of(pid: int, pattern: str | None = None) -> set[int]:
    found = subprocess.run(["pgrep", "-P", str(pid), *(["-f", pattern] if pattern else [])], capture_output=True,
                           text=True).stdout
    return {int(p) for p in found.split()}


def wait_until(condition, what: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.1)
    return value


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files whose slow tests cost most first: under pytest-xdist's --dist loadfile each file goes to
    one worker in this order, so the longest start at once instead of leaving one worker alone at the end.
    A test's cost is its `slow` mark's `seconds` (about what it takes alone on two cores), else 1."""
    cost: dict = {}
    for item in items:
        mark = item.get_closest_marker("slow")
        cost[item.path] = cost.get(item.path, 0) + (mark.kwargs.get("seconds", 1) if mark else 0)
    items.sort(key=lambda item: -cost[item.path])
