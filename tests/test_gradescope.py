"""`kata gradescope build`: the autograder zip, and its run_autograder run for real against temporary
/autograder-shaped trees (correct, partial, broken and hanging submissions) in a container of
Gradescope's default 768 MB, each results.json validated against a JSON Schema written from
Gradescope's documentation."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import zipfile
from pathlib import Path

import jsonschema
import pytest

from kata import cpus
from kata.course import load_course
from kata.grade import GradeError
from kata.gradescope import (
    PACKAGE_ROOT,
    RESERVE_MB,
    START_S,
    TIMEOUT_S,
    check_one_checkout,
    check_time,
    fitted,
    worst_case_s,
)
from kata.pool import grading_env
from kata.runner import GRACE_S
from tests.conftest import REPO, copy_course
from tests.test_cli import kata_exe
from tests.test_course import edit_toml
from tests.test_grade import CRASH, HANG, HANG_BUDGET, expected_diagnosis, grader_lines, planted, reference, write

SCHEMA = json.loads((Path(__file__).parent / "schemas" / "gradescope-results.schema.json").read_text())
GRADESCOPE_MEMORY_MB = "768"  # Gradescope's default container


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    base = tmp_path_factory.mktemp("gradescope")
    root = copy_course(base / "course")
    edit_toml(root, "points = 10\nrequires = []\ntime_budget_s = 30",
              f"points = 10\nrequires = []\ntime_budget_s = {HANG_BUDGET}")
    env = {**os.environ, "KATA_COURSE": str(root), "KATA_PROGRESS": str(base / "p.json")}
    built = subprocess.run([kata_exe(), "gradescope", "build", "--katas", "9.1,9.2", str(base / "autograder.zip")],
                           capture_output=True, text=True, env=env, timeout=120)
    assert built.returncode == 0, built.stderr
    assert "katas 9.1, 9.2, 20 points" in built.stdout
    return {"base": base, "course": root, "zip": base / "autograder.zip"}


def test_the_zip_holds_setup_run_autograder_and_the_course(autograder):
    with zipfile.ZipFile(autograder["zip"]) as zf:
        names = set(zf.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
        setup = zf.read("setup.sh").decode()
        run = zf.read("run_autograder").decode()
    assert {"setup.sh", "run_autograder", "course.toml", "pyproject.toml", "constraints.txt"} <= names
    assert {"graders/9.1-softmax/test_softmax.py", "solutions/9.2-layer-norm/solution.py", "kata/grade.py"} <= names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert modes["setup.sh"] & stat.S_IXUSR and modes["run_autograder"] & stat.S_IXUSR
    assert "-c constraints.txt" in setup and "download.pytorch.org/whl/cpu" in setup
    assert "gradescope run --katas 9.1,9.2" in run and "gradescope selfcheck --katas 9.1,9.2" in setup
    for script in ("setup.sh", "run_autograder"):
        text = setup if script == "setup.sh" else run
        assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0, f"{script} is valid bash"


def test_build_refuses_a_course_of_another_checkout(tmp_path):
    other = copy_course(tmp_path / "other-clone")
    write(other / "kata" / "__init__.py", "")  # a clone of its own, with its own kata package
    env = {**os.environ, "KATA_COURSE": str(other), "KATA_PROGRESS": str(tmp_path / "p.json")}
    built = subprocess.run([kata_exe(), "gradescope", "build", "--katas", "9.1", str(tmp_path / "a.zip")],
                           capture_output=True, text=True, env=env, timeout=120)
    message = " ".join(built.stderr.split())
    assert built.returncode == 2 and not (tmp_path / "a.zip").exists()
    assert f"`kata` runs from {PACKAGE_ROOT}, but the course is another checkout, {other}" in message, message
    assert f"pip install -e {other}" in message
    check_one_checkout(load_course(PACKAGE_ROOT))  # the checkout kata runs from


def test_build_refuses_katas_whose_budgets_could_pass_the_autograder_timeout(tmp_path):
    course = load_course(REPO)
    every, first = list(course.katas), [course.find("9.1"), course.find("9.2")]
    assert worst_case_s(every) == START_S + sum(k.time_budget_s + GRACE_S for k in every) > TIMEOUT_S
    with pytest.raises(GradeError, match=rf"takes {worst_case_s(every):g} s .* past the autograder timeout of 600 s"):
        check_time(every)
    assert check_time(first) is None and check_time(every, timeout_s=worst_case_s(every)) is None
    assert "--timeout" in check_time(every, allow_over=True)
    docs = " ".join((REPO / "docs" / "instructors.md").read_text().split())
    assert f"{worst_case_s(every[:4]):g} s for 9.1 to 9.4, {worst_case_s(every):g} s for all ten" in docs
    env = {**os.environ, "KATA_COURSE": str(REPO), "KATA_PROGRESS": str(tmp_path / "p.json")}
    refused = subprocess.run([kata_exe(), "gradescope", "build", str(tmp_path / "a.zip")], capture_output=True,
                             text=True, env=env, timeout=120)
    assert refused.returncode == 2 and "--allow-over-timeout builds it anyway" in " ".join(refused.stderr.split())
    assert not (tmp_path / "a.zip").exists()
    allowed = subprocess.run([kata_exe(), "gradescope", "build", "--allow-over-timeout", str(tmp_path / "a.zip")],
                             capture_output=True, text=True, env=env, timeout=120)
    assert allowed.returncode == 0 and "warning:" in allowed.stderr and (tmp_path / "a.zip").is_file()
    longer = subprocess.run([kata_exe(), "gradescope", "build", "--timeout", "2400", str(tmp_path / "b.zip")],
                            capture_output=True, text=True, env=env, timeout=120)
    assert longer.returncode == 0 and not longer.stderr and f"at most {worst_case_s(every):g} s" in longer.stdout


def run_autograder(autograder, name: str, files: dict[str, str]) -> dict:
    """An /autograder tree as Gradescope makes it (source/ unzipped, run_autograder copied up, the
    submission in submission/), run_autograder run in it; its results.json."""
    tree = autograder["base"] / name / "autograder"
    with zipfile.ZipFile(autograder["zip"]) as zf:
        zf.extractall(tree / "source")
    (tree / "run_autograder").write_bytes((tree / "source" / "run_autograder").read_bytes())
    (tree / "submission").mkdir()
    for relative, text in files.items():
        write(tree / "submission" / relative, text)
    env = {key: value for key, value in os.environ.items() if key != "KATA_COURSE"}  # the zip's course grades
    env |= {"KATA_AUTOGRADER_ROOT": str(tree), "KATA_AUTOGRADER_BIN": str(Path(kata_exe()).parent),
            "KATA_PROGRESS": str(tree / "p.json"), "KATA_CONTAINER_MEMORY_MB": GRADESCOPE_MEMORY_MB}
    done = subprocess.run(["bash", str(tree / "run_autograder")], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tree / "results" / "results.json").read_text())
    jsonschema.validate(results, SCHEMA)
    assert results["score"] == pytest.approx(sum(t["score"] for t in results["tests"]))
    assert sum(t["max_score"] for t in results["tests"]) == pytest.approx(20)
    return results


def by_kata(results: dict) -> dict[str, list[dict]]:
    tests: dict[str, list[dict]] = {}
    for test in results["tests"]:
        tests.setdefault(test["tags"][0], []).append(test)
    return tests


def test_a_correct_submission_gets_full_marks_in_768_mb(autograder):
    root = autograder["course"]
    results = run_autograder(autograder, "correct", {"transformer-katas/exercises/9.1-softmax/exercise.py":
                                                     reference(root, "9.1"),
                                                     "9.2-layer-norm.py": reference(root, "9.2")})
    assert results["score"] == 20
    tests = by_kata(results)
    assert len(tests["9.1"]) == 16 and len(tests["9.2"]) > 1
    assert all(t["status"] == "passed" and t["score"] == t["max_score"] > 0 for t in results["tests"])
    assert results["extra_data"]["container_memory_mb"] == 768
    assert 0 < results["extra_data"]["peak_child_memory_mb"] < 768


def test_a_partial_submission_gets_the_points_of_its_passed_checks(autograder):
    root = autograder["course"]
    # 9.2 keeps 800 MB alive: within the kata's own 4 GiB, beyond what a 768 MB container leaves.
    hog = reference(root, "9.2") + "\n_kept = torch.ones(200_000_000)\n"
    results = run_autograder(autograder, "partial", {"9.1-softmax.py": planted(root, "9.1", "no_max_subtraction"),
                                                     "9.2-layer-norm.py": hog})
    assert results["score"] == 7.5  # 12 of 16 equal checks, as `kata grade` gives it
    tests = by_kata(results)
    failed = [t for t in tests["9.1"] if t["status"] == "failed"]
    assert len(failed) == 4 and all(t["score"] == 0 and t["output"] for t in failed)
    # Each failed check's output: its message, then the mistake it looks like, as `kata check` says it.
    _, no_max = expected_diagnosis(root, "9.1", "no_max_subtraction")
    assert all(t["output"].endswith(f"\nLooks like: {no_max}") for t in failed)
    assert all("NaN" in t["output"].split("\nLooks like: ")[0] for t in failed)
    assert not [line for line in grader_lines(root) if any(line in t["output"] for t in results["tests"])]
    (memory,) = tests["9.2"]
    assert memory["score"] == 0 and memory["max_score"] == 10
    assert f"used more than {int(GRADESCOPE_MEMORY_MB) - RESERVE_MB} MiB of memory" in memory["output"]


def test_broken_and_hanging_submissions_get_their_reasons(autograder):
    root = autograder["course"]
    broken = run_autograder(autograder, "broken", {"9.1-softmax.py": "def softmax(x, dim=-1):\n    return x.exp( / 2\n",
                                                   "9.2-layer-norm.py": CRASH})
    assert broken["score"] == 0
    (syntax,), (crash,) = by_kata(broken)["9.1"], by_kata(broken)["9.2"]
    assert "syntax-error (9.1-softmax.py:2)" in syntax["output"] and "exit code 3" in crash["output"]
    hanging = run_autograder(autograder, "hanging", {"9.1-softmax.py": HANG,
                                                     "9.2-layer-norm.py": reference(root, "9.2")})
    assert hanging["score"] == 10 and hanging["execution_time"] >= HANG_BUDGET
    (timeout,) = by_kata(hanging)["9.1"]
    assert timeout["output"].startswith("timeout") and f"longer than {HANG_BUDGET} s" in timeout["output"]
    # Feedback, never the graders' source.
    graders = [line.strip() for path in (root / "graders").rglob("*.py") for line in path.read_text().splitlines()
               if len(line.strip()) > 30]
    outputs = "\n".join(t["output"] for r in (broken, hanging) for t in r["tests"])
    assert not [line for line in graders if line in outputs]


def test_kata_limits_fit_the_container():
    kata = load_course(Path(__file__).resolve().parents[1]).find("9.1")
    assert fitted(kata, None) is kata and fitted(kata, 8192) is kata
    assert fitted(kata, 768).memory_mb == 768 - RESERVE_MB


def test_setup_refuses_a_container_too_small_for_the_references(autograder):
    """setup.sh's last step: each reference graded here as a submission is, full marks or no image."""
    env = {**os.environ, "KATA_COURSE": str(autograder["course"]), "KATA_PROGRESS": str(autograder["base"] / "s.json")}

    def selfcheck(memory_mb: str) -> subprocess.CompletedProcess:
        return subprocess.run([kata_exe(), "gradescope", "selfcheck", "--katas", "9.1"], capture_output=True,
                              text=True, env={**env, "KATA_CONTAINER_MEMORY_MB": memory_mb}, timeout=120)

    fits = selfcheck(GRADESCOPE_MEMORY_MB)
    assert fits.returncode == 0 and "every reference gets full marks here: 9.1" in fits.stdout, fits.stderr
    small = selfcheck("260")  # the judge alone, which imports torch, needs more
    assert small.returncode == 1
    assert re.search(r"the judge alone, which imports torch, takes \d+ MB here, which with the 200 MB kept for `kata` "
                     r"does not fit the container's 260 MB: raise the autograder's memory", small.stderr), small.stderr
    assert "raise the autograder's memory in the assignment's Gradescope settings" in small.stderr


def fake_cgroups(tmp_path: Path, proc: str, files: dict[str, str]) -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    for relative, text in files.items():
        write(root / relative, text)
    root.mkdir(exist_ok=True)
    write(tmp_path / "proc-cgroup", proc)
    return root, tmp_path / "proc-cgroup"


@pytest.mark.parametrize(("proc", "files", "quota"), [
    ("0::/\n", {"cpu.max": "150000 100000\n"}, 1.5),  # a container's own cgroup seen as the root (v2)
    ("0::/\n", {"cpu.max": "max 100000\n"}, None),
    ("0::/a/b\n", {"a/b/cpu.max": "max 100000\n", "a/cpu.max": "200000 100000\n", "cpu.max": "max 100000\n"}, 2.0),
    ("3:cpu,cpuacct:/docker/1f\n0::/\n", {"cpu,cpuacct/cpu.cfs_quota_us": "50000\n",  # v1, its path not mounted
                                          "cpu,cpuacct/cpu.cfs_period_us": "100000\n"}, 0.5),
    ("1:cpu:/\n0::/\n", {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
])
def test_the_cpu_quota_is_read_from_the_cgroup(tmp_path, proc, files, quota):
    assert cpus.cpu_quota(*fake_cgroups(tmp_path, proc, files)) == quota


def test_threads_follow_the_containers_cpus_not_the_hosts(tmp_path, monkeypatch):
    """A Gradescope container of 2 CPUs on a 64-core host: torch gets 1 thread, not 32 that the quota throttles."""
    root, proc = fake_cgroups(tmp_path, "0::/\n", {"cpu.max": "200000 100000\n"})
    monkeypatch.setattr(cpus, "CGROUP_ROOT", root)
    monkeypatch.setattr(cpus, "PROC_CGROUP", proc)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    course = load_course(REPO)
    assert cpus.usable_cpus() == 2 and grading_env(course)["OMP_NUM_THREADS"] == "1"
    (root / "cpu.max").write_text("max 100000\n")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5}, raising=False)  # a cpuset
    assert cpus.usable_cpus() == 6 and grading_env(course)["OMP_NUM_THREADS"] == "3"
