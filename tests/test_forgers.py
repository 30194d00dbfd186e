"""A class of forgers who control their whole process (`tests/forgers.py`), graded on every path that counts
beside honest students: `kata check`, `kata grade` (warm pool and cold), Gradescope's run_autograder (with
and without bubblewrap), the GitHub Classroom step, `kata verify --progress --regrade` (and nbgrader, in
tests/test_nbgrader.py's round trip: `NBGRADER_FORGERS`). Exact expected scores: 0 for each forger, full
marks for the honest students; no file a forger aims at changes, no process of theirs outlives the run,
nothing reaches the machine's /tmp or the network."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
import zipfile
from pathlib import Path

import pytest

from kata.course import load_course
from kata.stubs import derive_stub
from tests.conftest import copy_course
from tests.forgers import MARK, ZEROS, attacks, forgers
from tests.test_cli import kata_exe
from tests.test_course import edit_toml
from tests.test_grade import reference, write

BUDGET = 8  # s: kata 9.1's time budget in the course copies, so that the stalling forger costs little
TIMEOUT = 600
pytestmark = pytest.mark.slow(seconds=60)


@pytest.fixture(scope="module")
def course_root(tmp_path_factory) -> Path:
    root = copy_course(tmp_path_factory.mktemp("forgers") / "course")
    edit_toml(root, "points = 10\nrequires = []\ntime_budget_s = 30",
              f"points = 10\nrequires = []\ntime_budget_s = {BUDGET}")
    return root


def stub(root: Path) -> str:
    """Kata 9.1's stub, derived from its solution: the course's exercise file is what the last test left."""
    solution = load_course(root).find("9.1").solution
    return derive_stub(solution.read_text(), filename=solution.name)


def env_for(root: Path, **more: str) -> dict[str, str]:
    return {**os.environ, "KATA_COURSE": str(root), "KATA_PROGRESS": str(root / ".kata-progress.json"), **more}


def snapshot(paths: list[Path]) -> dict[Path, bytes | None]:
    return {p: p.read_bytes() if p.exists() else None for p in paths}


def assert_no_trace(started: float) -> None:
    """Nothing of a forger outlived its run or reached the machine: no process with the mark in its command
    line (give the kernel a moment to end a namespace's processes), no file in the machine's /tmp."""
    deadline = time.monotonic() + 10
    while (left := subprocess.run(["pgrep", "-af", MARK], capture_output=True, text=True).stdout.strip()):
        assert time.monotonic() < deadline, f"processes of a forger outlived the run:\n{left}"
        time.sleep(0.2)
    leftover = Path("/tmp") / MARK
    assert not (leftover.exists() and leftover.stat().st_mtime >= started), "a forger wrote to the machine's /tmp"


def test_kata_check(course_root):
    """`kata check` as a student runs it, on the course's own exercise file: the progress file a forger
    aims at says what the checks said, and only that."""
    started = time.time()
    progress = course_root / ".kata-progress.json"
    exercise = course_root / "exercises" / "9.1-softmax" / "exercise.py"
    aimed = [progress, course_root / "course.toml", course_root / "graders" / "9.1-softmax" / "test_softmax.py"]
    students = {"honest": reference(course_root, "9.1"), "zeros": ZEROS,
                **forgers(stub(course_root), [str(p) for p in aimed])}
    # Kata 9.4 too: the issue's `class MultiHeadAttention: pass` and the frames attack passed with 20 of 20.
    mha = "class MultiHeadAttention:\n    pass\n" + attacks([])["frames"]
    for name, source in [*students.items(), ("mha", mha)]:
        kata = "9.4" if name == "mha" else "9.1"
        target = course_root / "exercises" / ("9.4-multi-head-attention" if name == "mha" else "9.1-softmax")
        write(target / "exercise.py", source)
        before = snapshot(aimed[1:])
        done = subprocess.run([kata_exe(), "check", kata, "--json"], capture_output=True, text=True,
                              env=env_for(course_root), cwd=course_root, timeout=TIMEOUT)
        result = json.loads(done.stdout)
        recorded = json.loads(progress.read_text())["katas"].get(kata, {}).get("status")
        if name == "honest":
            assert (result["outcome"], result["points"], recorded) == ("passed", 10.0, "passed")
            continue
        assert result["points"] == 0.0 and result["outcome"] != "passed", (name, result["outcome"], result["message"])
        assert done.returncode != 0 and recorded != "passed", (name, recorded)
        assert snapshot(aimed[1:]) == before, name
        assert MARK not in progress.read_text(), name
    exercise.write_text(stub(course_root))
    assert_no_trace(started)


def make_class(root: Path, folder: Path, out: Path) -> list[Path]:
    """Two honest students, the zeros-only one, and the forgers; the files the forgers aim at."""
    aimed = [out / "results.jsonl", out / "grades.csv", folder / "alice" / "9.1-softmax.py"]
    for name in ("alice", "zoe"):
        write(folder / name / "9.1-softmax.py", reference(root, "9.1"))
    write(folder / "zeros" / "9.1-softmax.py", ZEROS)
    for name, source in forgers(stub(root), [str(p) for p in aimed]).items():
        write(folder / name / "9.1-softmax.py", source)
    return aimed


def expected_class(folder: Path) -> dict[str, float]:
    return {p.name: 10.0 if p.name in ("alice", "zoe") else 0.0 for p in folder.iterdir()}


@pytest.mark.parametrize("pool", ["warm", "cold"])
def test_kata_grade(course_root, tmp_path, pool):
    started = time.time()
    folder, out = tmp_path / "class", tmp_path / "grades"
    aimed = make_class(course_root, folder, out)
    class_files = snapshot([p for p in folder.rglob("*") if p.is_file()])
    env = env_for(course_root, **({"KATA_POOL": "0"} if pool == "cold" else {}))

    def grade() -> dict[str, float]:
        done = subprocess.run([kata_exe(), "grade", str(folder), "--out", str(out), "--katas", "9.1", "--jobs", "2",
                               "--json"], capture_output=True, text=True, env=env, timeout=TIMEOUT)
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads(done.stdout)
        assert all("namespaces of its own" in k["isolation"] for s in report["students"] for k in s["katas"])
        return {s["student"]: s["katas"][0]["points"] for s in report["students"]}

    assert grade() == expected_class(folder)
    assert snapshot(list(class_files)) == class_files
    for report in aimed[:2]:
        assert MARK not in report.read_text() and "forged" not in report.read_text()
    assert grade() == expected_class(folder)  # again, from the journal the forgers aimed at
    assert_no_trace(started)


@pytest.fixture(scope="module")
def autograder(course_root, tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("gradescope")
    built = subprocess.run([kata_exe(), "gradescope", "build", "--katas", "9.1", str(base / "autograder.zip")],
                           capture_output=True, text=True, env=env_for(course_root), timeout=120)
    assert built.returncode == 0, built.stderr
    return base / "autograder.zip"


# Those that aim at what Gradescope's run writes or leaves: its results.json, processes in the container.
GRADESCOPE_FORGERS = {True: ("descriptors", "extension", "speaker-zeros"),
                      False: ("descriptors", "extension", "survivor")}


def run_autograder(zip_path: Path, tree: Path, source: str, path: str | None) -> dict:
    """An /autograder tree as Gradescope makes it, run_autograder run in it (with `path` as PATH); its
    results.json."""
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(tree / "source")
    (tree / "run_autograder").write_bytes((tree / "source" / "run_autograder").read_bytes())
    write(tree / "submission" / "9.1-softmax.py", source)
    env = {key: value for key, value in os.environ.items() if key != "KATA_COURSE"}
    env |= {"KATA_AUTOGRADER_ROOT": str(tree), "KATA_AUTOGRADER_BIN": str(Path(kata_exe()).parent),
            "KATA_PROGRESS": str(tree / "p.json"), **({"PATH": path} if path else {})}
    done = subprocess.run([shutil.which("bash"), str(tree / "run_autograder")], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((tree / "results" / "results.json").read_text())


@pytest.mark.parametrize("bubblewrap", [True, False], ids=["bubblewrap", "no-bubblewrap"])
def test_gradescope(course_root, autograder, tmp_path, bubblewrap):
    """run_autograder as Gradescope runs it, each submission in an /autograder tree of its own; without
    bubblewrap on the PATH the student's process still walls itself off (or, in a container without user
    namespaces, runs as nobody, which may read neither the source nor write the results)."""
    started = time.time()
    path = None
    if not bubblewrap:
        tools = tmp_path / "bin"
        tools.mkdir()
        for tool in ("bash", "chmod", "mkdir"):
            (tools / tool).symlink_to(shutil.which(tool))
        path = f"{tools}{os.pathsep}{Path(kata_exe()).parent}"
    for name, source in {"honest": reference(course_root, "9.1"),
                         **forgers(stub(course_root), ["../results/results.json", "/autograder/results/results.json"],
                                   GRADESCOPE_FORGERS[bubblewrap])}.items():
        results = run_autograder(autograder, tmp_path / name / "autograder", source, path)
        assert results["score"] == (10.0 if name == "honest" else 0.0), (name, results["output"])
        assert MARK not in json.dumps(results), name
    assert_no_trace(started)


def test_classroom_step(course_root, tmp_path):
    """The command each step of the Classroom workflow runs, in the student's repository: its result line
    decodes to the points."""
    started = time.time()
    for name, source in {"honest": reference(course_root, "9.1"),
                         **forgers(stub(course_root), [], ("frames", "extension", "speaker-zeros"))}.items():
        repo = copy_course(tmp_path / name)
        write(repo / "exercises" / "9.1-softmax" / "exercise.py", source)
        done = subprocess.run([kata_exe(), "classroom", "grade", "9.1", "--submission", str(repo)], cwd=repo,
                              env=env_for(repo), capture_output=True, text=True, timeout=TIMEOUT)
        line = next(x for x in done.stdout.splitlines() if x.startswith("result="))
        result = json.loads(base64.b64decode(line.removeprefix("result=")))
        assert sum(t["score"] for t in result["tests"]) == (10.0 if name == "honest" else 0.0), (name, result)
    assert_no_trace(started)


def test_verify_progress_regrade(course_root, tmp_path):
    """A pass written by hand beside a forger's exercise: `kata verify --progress --regrade` regrades it
    and finds it failing."""
    from kata.progress import file_hash

    root = copy_course(tmp_path / "course")
    exercise = root / "exercises" / "9.1-softmax" / "exercise.py"
    exercise.write_text(forgers(stub(root), [str(root / ".kata-progress.json")], ("speaker-zeros",))
                        ["speaker-zeros"])
    (root / ".kata-progress.json").write_text(json.dumps({"schema": 1, "katas": {
        "9.1": {"status": "passed", "attempts": 1, "passed_hash": file_hash(exercise)}}}))
    done = subprocess.run([kata_exe(), "verify", "--progress", "9.1", "--regrade", "--json"], capture_output=True,
                          text=True, env=env_for(root), cwd=root, timeout=TIMEOUT)
    assert done.returncode == 1 and json.loads(done.stdout)["katas"][0]["verdict"] == "regraded-failing", done.stdout
