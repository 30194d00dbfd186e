"""`kata gradescope build`: the autograder zip, and its run_autograder run for real against temporary
/autograder-shaped trees (correct, partial, broken and hanging submissions) in a container of
Gradescope's default 768 MB, each results.json validated against a JSON Schema written from
Gradescope's documentation."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import stat
import subprocess
import time
import zipfile
from pathlib import Path

import jsonschema
import pytest

from kata import cpus
from kata import gradescope as gs
from kata.course import load_course
from kata.grade import GradeError, KataGrade
from kata.gradescope import (
    PACKAGE_ROOT,
    RESERVE_MB,
    START_S,
    TIMEOUT_S,
    Visibility,
    check_one_checkout,
    check_time,
    fitted,
    parse_visibility,
    worst_case_s,
)
from kata.pool import grading_env
from kata.runner import GRACE_S, describe_walls
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


def autograder_tree(autograder, name: str, files: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """An /autograder tree as Gradescope makes it (source/ unzipped, run_autograder copied up, the
    submission in submission/), and the environment to run its run_autograder in."""
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
    return tree, env


def run_autograder(autograder, name: str, files: dict[str, str]) -> dict:
    """run_autograder run in an /autograder tree (`autograder_tree`); its results.json, checked against the
    schema, its scores adding up to the total and each kata's to the kata's points."""
    tree, env = autograder_tree(autograder, name, files)
    done = subprocess.run(["bash", str(tree / "run_autograder")], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tree / "results" / "results.json").read_text())
    jsonschema.validate(results, SCHEMA)
    assert results["score"] == pytest.approx(sum(t.get("score", 0) for t in results["tests"]))
    assert {kata: sum(t.get("max_score", 0) for t in tests) for kata, tests in by_kata(results).items()} == \
        {"9.1": pytest.approx(10), "9.2": pytest.approx(10)}
    kata_points = {line.split()[0]: float(line.rsplit(": ", 1)[1].split(" / ")[0])
                   for line in results["output"].splitlines()[:2]}  # "9.1 <title>: 7.5 / 10 (failed)"
    assert {kata: sum(t.get("score", 0) for t in tests) for kata, tests in by_kata(results).items()} == \
        {kata: pytest.approx(points) for kata, points in kata_points.items()}
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
    # What the student's code ran under, per kata, and in one line of the output.
    isolation = results["extra_data"]["isolation"]
    assert set(isolation) == {"9.1", "9.2"}
    walls = isolation["9.1"]["walls"]
    assert walls["namespaces"] or walls["user"] == "nobody", walls
    assert isolation["9.2"]["walls"] == walls and describe_walls(walls) in isolation["9.1"]["sandbox"]
    assert results["output"].splitlines()[-1] == f"Isolation: {describe_walls(walls)}"


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


# ---- visibility ----------------------------------------------------------------------------------------------


def test_visibility_rules_are_checked_at_build_and_the_most_specific_applies():
    course = load_course(REPO)
    katas = [course.find("9.1"), course.find("9.2")]
    rules = parse_visibility(course, katas, ["after_published", "9.1=hidden", "softmax:test_grad*=after_due_date",
                                             "9.1:test_gradcheck=visible"])
    assert rules.level("9.2", "test_affine[cpu-float32]") == "after_published"  # the default
    assert rules.level("9.1", "test_matches_torch_softmax[cpu-float32]") == "hidden"  # the kata's
    assert rules.level("9.1", "test_gradients_match_torch[cpu-float64]") == "after_due_date"  # a check pattern
    assert rules.level("9.1", "test_gradcheck") == "visible"  # a check by name
    assert rules.level("9.1") == "hidden"  # the kata's one test when no check ran: the kata's rule
    assert Visibility().level("9.1", "test_gradcheck") == "visible"
    # What run_autograder passes to `kata gradescope run` reads back as the same rules.
    again = parse_visibility(course, katas, shlex.split(rules.arguments())[1::2])
    assert again == rules and rules.arguments().startswith(" --visibility after_published --visibility 9.1=hidden")
    for spec, problem in [("9.1=soon", "the level must be one of visible, after_due_date, after_published, hidden"),
                          ("9.3=hidden", "kata 9.3 is not one of the assignment's katas (9.1, 9.2)"),
                          ("9.99=hidden", "no kata '9.99'"),
                          ("9.1:test_nothing*=hidden", "no check of kata 9.1 is named like 'test_nothing*'")]:
        with pytest.raises(GradeError, match=re.escape(f"--visibility {spec}: {problem}")):
            parse_visibility(course, katas, [spec])


def test_hidden_details_keep_the_verdict_visible_and_the_points_exact():
    """A check whose details wait for the due date: a visible test with its name and verdict, no points and no
    details, then the test itself (points, message, diagnoses) at its level, as otter-grader shows hidden tests."""
    kata = load_course(REPO).find("9.1")
    checks = [{"id": "test_matches_torch_softmax[cpu-float32]", "title": "Matches torch [cpu-float32]",
               "status": "passed", "points": 2.5, "worth": 2.5, "message": "", "diagnoses": []},
              {"id": "test_large_logits_stay_finite[cpu-float32]", "title": "Large logits [cpu-float32]",
               "status": "failed", "points": 0.0, "worth": 2.5, "message": "NaN at (0, 3)",
               "diagnoses": [{"id": "no_max_subtraction", "explanation": "no max subtracted"}]},
              {"id": "test_gradcheck", "title": "Gradcheck", "status": "error", "points": 0.0, "worth": 5.0,
               "message": "ValueError: no", "diagnoses": []}]
    grade = KataGrade("submission", "9.1", "failed", 2.5, 10.0, checks=checks)
    rules = Visibility((("9.1", "test_large*", "after_due_date"), ("9.1", "test_gradcheck", "hidden")))
    tests = gs._tests(kata, grade, rules)
    assert [(t["visibility"], t["status"], t.get("score")) for t in tests] == [
        ("visible", "passed", 2.5),
        ("visible", "failed", None), ("after_due_date", "failed", 0.0),
        ("visible", "failed", None), ("hidden", "failed", 0.0)]
    summary, details = tests[1], tests[2]
    assert summary == {"name": "9.1 Numerically stable softmax: Large logits [cpu-float32]", "number": "9.1.2",
                       "status": "failed", "visibility": "visible", "tags": ["9.1"],
                       "output": "failed: the details and points are shown after the due date"}
    assert details["name"] == f"{summary['name']} (details)" and details["max_score"] == 2.5
    assert "NaN at (0, 3)" in details["output"] and "no max subtracted" in details["output"]
    assert tests[3]["output"] == "error: the details and points are shown to the instructors only"
    assert sum(t.get("max_score", 0) for t in tests) == kata.points
    assert sum(t.get("score", 0) for t in tests) == grade.points
    # A kata whose checks did not run: its one test follows the kata's level, the outcome said at once.
    timeout = KataGrade("submission", "9.1", "timeout", 0.0, 10.0, "ran longer than 30 s")
    summary, details = gs._tests(kata, timeout, Visibility((("9.1", None, "after_published"),)))
    assert summary["output"] == "timeout: the details and points are shown once the grades are published"
    assert details["visibility"] == "after_published" and details["output"] == "timeout: ran longer than 30 s"
    assert (details["score"], details["max_score"]) == (0.0, 10.0)


def test_details_after_the_due_date_on_gradescope(autograder):
    """Built with --visibility, run_autograder keeps the chosen checks' details back; the points stay exact."""
    root, hidden_zip = autograder["course"], autograder["base"] / "hidden.zip"
    env = {**os.environ, "KATA_COURSE": str(root), "KATA_PROGRESS": str(autograder["base"] / "h.json")}
    built = subprocess.run([kata_exe(), "gradescope", "build", "--katas", "9.1,9.2", "--visibility",
                            "9.1:test_large_logits_stay_finite=after_due_date", "--visibility", "9.2=hidden",
                            str(hidden_zip)], capture_output=True, text=True, env=env, timeout=120)
    assert built.returncode == 0, built.stderr
    with zipfile.ZipFile(hidden_zip) as zf:
        assert ("--visibility 9.1:test_large_logits_stay_finite=after_due_date --visibility 9.2=hidden"
                in zf.read("run_autograder").decode())
    results = run_autograder({**autograder, "zip": hidden_zip}, "hidden-details",
                             {"9.1-softmax.py": planted(root, "9.1", "no_max_subtraction"),
                              "9.2-layer-norm.py": reference(root, "9.2")})
    assert results["score"] == 17.5  # as without visibility rules: 12 of 9.1's 16 checks, all of 9.2's
    tests = by_kata(results)
    large = [t for t in tests["9.1"] if t["visibility"] == "after_due_date"]
    summaries = [t for t in tests["9.1"] if t["visibility"] == "visible" and "score" not in t]
    assert large and len(summaries) == len(large)
    assert [t["name"] + " (details)" for t in summaries] == [t["name"] for t in large]
    assert [t["status"] for t in summaries] == [t["status"] for t in large]
    assert any(t["status"] == "failed" and "Looks like" in t["output"] for t in large)
    assert all(t["output"].endswith(": the details and points are shown after the due date") for t in summaries)
    assert {t["visibility"] for t in tests["9.2"]} == {"visible", "hidden"}
    assert all("score" not in t for t in tests["9.2"] if t["visibility"] == "visible")
    assert sum(t["score"] for t in tests["9.2"] if t["visibility"] == "hidden") == pytest.approx(10)


# ---- isolation and stops on the way --------------------------------------------------------------------------


def test_results_say_what_the_students_code_ran_under():
    katas = [load_course(REPO).find("9.1"), load_course(REPO).find("9.2")]
    nobody = {"user": "nobody", "namespaces": False, "problem": "unshare: Operation not permitted"}
    grades = [KataGrade("s", "9.1", "passed", 10.0, 10.0, isolation="none; x", walls=nobody),
              KataGrade("s", "9.2", "missing", 0.0, 10.0, "no file")]
    results = gs._results(katas, grades, Visibility(), time.perf_counter(), 768)
    assert results["extra_data"]["isolation"] == {"9.1": {"walls": nobody, "sandbox": "none; x"}}
    assert results["output"].splitlines()[-1] == ("Isolation: the student's process as user nobody without namespaces "
                                                  "(unshare: Operation not permitted)")
    none_ran = gs._results(katas, grades[1:], Visibility(), time.perf_counter(), 768)
    assert none_ran["output"].splitlines()[-1] == "Isolation: no kata's code ran"
    jsonschema.validate(results, SCHEMA)


def test_an_endless_loop_at_import_still_ends_with_results(autograder):
    """A file that never finishes loading, and a child of it that ignores SIGTERM: the kata's time budget ends
    both, and the next kata is graded."""
    root = autograder["course"]
    endless = ("import os, signal\n\nif os.fork() == 0:\n    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
               "while True:\n    pass\n")
    results = run_autograder(autograder, "endless-import", {"9.1-softmax.py": endless,
                                                            "9.2-layer-norm.py": reference(root, "9.2")})
    assert results["score"] == 10 and results["execution_time"] >= HANG_BUDGET
    (timeout,) = by_kata(results)["9.1"]
    assert timeout["output"] == ("timeout (9.1-softmax.py:5): your code ran past the kata's time budget while "
                                 "importing your file")


def test_an_autograder_stopped_on_the_way_leaves_results(autograder):
    """Gradescope stopping run_autograder (its timeout, its memory) mid-kata: results.json is already there,
    the kata in progress and those after it each a failed test that says so."""
    tree, env = autograder_tree(autograder, "stopped", {"9.1-softmax.py": HANG,
                                                        "9.2-layer-norm.py": reference(autograder["course"], "9.2")})
    results_json = tree / "results" / "results.json"
    started = subprocess.Popen(["bash", str(tree / "run_autograder")], cwd=tree, env=env, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not results_json.exists() and started.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        os.killpg(started.pid, signal.SIGKILL)
        started.wait(timeout=30)
    results = json.loads(results_json.read_text())
    jsonschema.validate(results, SCHEMA)
    assert results["score"] == 0 and [t["tags"] for t in results["tests"]] == [["9.1"], ["9.2"]]
    first, second = results["tests"]
    assert first["output"].startswith("not graded: the autograder was stopped while it graded this kata")
    assert second["output"].startswith("not graded: the autograder was stopped before it graded this kata")
    assert (first["max_score"], second["max_score"]) == (10, 10)
    assert results["output"].splitlines()[:2] == ["9.1 Numerically stable softmax: not graded",
                                                  "9.2 Layer normalisation: not graded"]


# ---- setup.sh ------------------------------------------------------------------------------------------------

UBUNTU = {"22.04": 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\nVERSION_ID="22.04"\n',
          "24.04": 'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nID=ubuntu\nVERSION_ID="24.04"\n'}
PYTHON3 = {"22.04": "3.10", "24.04": "3.12"}  # each image's python3
STUB = """#!/usr/bin/env bash
echo "{name} $*" >> "$STUB_LOG"
{body}
"""


def stub(folder: Path, name: str, body: str = "") -> None:
    path = folder / name
    write(path, STUB.format(name=name, body=body))
    path.chmod(0o755)


def run_setup(tmp_path: Path, image: str, install: int, namespaces: bool,
              release: bool = True) -> tuple[subprocess.CompletedProcess, list[str]]:
    """setup.sh run offline in a fake image: apt-get, bwrap and python are stubs that log what they are asked
    (apt-get's `install ... bubblewrap` exits with `install`), the os-release file is the image's (if `release`)."""
    root, stubs, log = tmp_path / "autograder", tmp_path / "bin", tmp_path / "calls.log"
    script = gs.SETUP_SH.format(root_env=gs.ROOT_ENV, os_release_env=gs.OS_RELEASE_ENV, katas="9.1,9.2")
    (root / "source").mkdir(parents=True)
    if release:
        write(tmp_path / "os-release", UBUNTU[image])
    stub(stubs, "apt-get", f'[[ "$*" == *bubblewrap* ]] && exit {install}\nexit 0')
    stub(stubs, "bwrap", "exit 0" if namespaces else 'echo "bwrap: No permissions to create new namespace" >&2; exit 1')
    venv = ('if [ "$1" = -m ]; then mkdir -p "$3/bin"; for tool in pip python kata; do\n'
            '  printf \'#!/usr/bin/env bash\\necho "venv/%s $*" >> "$STUB_LOG"\\n\' "$tool" > "$3/bin/$tool"\n'
            '  chmod +x "$3/bin/$tool"; done; fi')
    old = PYTHON3[image] == "3.10"
    stub(stubs, "python3", f'if [ "$1" = -c ]; then exit {int(old)}; fi\n{venv}')
    stub(stubs, "python3.11", venv)
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "STUB_LOG": str(log), gs.ROOT_ENV: str(root),
           gs.OS_RELEASE_ENV: str(tmp_path / "os-release")}
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=60)
    return done, log.read_text().splitlines()


@pytest.mark.parametrize("image", ["22.04", "24.04"])
@pytest.mark.parametrize(("install", "namespaces", "said"), [
    pytest.param(0, True, "kata setup: bubblewrap installed, and it makes namespaces while the image is built",
                 id="works"),
    pytest.param(0, False, "kata setup: bubblewrap installed, but it cannot make namespaces while the image is built",
                 id="no-namespaces"),
    pytest.param(100, False, "kata setup: bubblewrap could not be installed (apt-get exit code 100): grading goes on "
                 "without it", id="not-installable"),
])
def test_setup_installs_bubblewrap_or_says_why_not(tmp_path, image, install, namespaces, said):
    done, calls = run_setup(tmp_path, image, install, namespaces)
    assert done.returncode == 0, done.stderr
    log = done.stdout + done.stderr
    assert f"kata setup: image Ubuntu {image}" in log
    assert said in " ".join(log.split()), log
    python = ["apt-get install -y --no-install-recommends python3.11 python3.11-venv"] if image == "22.04" else \
        ["apt-get install -y --no-install-recommends python3-venv python3-pip"]
    probe = ["bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent true"] if install == 0 else []
    assert calls[:4 + len(probe)] == ["apt-get update", "python3 -c import sys; sys.exit(sys.version_info < (3, 11))",
                                      *python, "apt-get install -y --no-install-recommends bubblewrap", *probe]
    # Whatever became of bubblewrap, the course is installed and the references checked.
    assert calls[-1] == "venv/kata gradescope selfcheck --katas 9.1,9.2"
    assert [c.split()[0] for c in calls[-3:]] == ["venv/pip", "venv/python", "venv/kata"]


def test_setup_says_when_the_image_has_no_os_release(tmp_path):
    done, calls = run_setup(tmp_path, "24.04", 0, True, release=False)
    assert done.returncode == 0 and f"kata setup: image unknown (no {tmp_path / 'os-release'})" in done.stdout
    assert calls[-1] == "venv/kata gradescope selfcheck --katas 9.1,9.2"
