"""`kata classroom workflow`: the GitHub Classroom workflow, validated offline against GitHub's workflow
schema (check-jsonschema's vendored copy), and each kata step's command run here as Actions would run
it: the decoded points, check by check, are the ones `kata grade` gives the same repository."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from kata import classroom
from kata.course import load_course
from kata.grade import KataGrade
from tests.conftest import copy_course
from tests.test_cli import kata_exe
from tests.test_course import edit_toml
from tests.test_grade import HANG, HANG_BUDGET, expected_diagnosis, grader_lines, planted, write


def check_workflow_schema(path: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("check-jsonschema", path=str(Path(kata_exe()).parent))
    return subprocess.run([exe, "--builtin-schema", "vendor.github-workflows", str(path)], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A student's repository made from the template (the course), with their 9.1 and 9.2 (planted
    mistakes; 9.2's checks weigh 1 or 2), and the workflow `kata classroom workflow` wrote into the template.
    9.1's time budget is short, for the student whose loop never ends."""
    base = tmp_path_factory.mktemp("classroom")
    repo = copy_course(base / "student-repo")
    edit_toml(repo, "points = 10\nrequires = []\ntime_budget_s = 30",
              f"points = 10\nrequires = []\ntime_budget_s = {HANG_BUDGET}")
    write(repo / "exercises" / "9.1-softmax" / "exercise.py", planted(repo, "9.1", "no_max_subtraction"))
    write(repo / "exercises" / "9.2-layer-norm" / "exercise.py", planted(repo, "9.2", "unbiased_variance"))
    env = {**os.environ, "KATA_COURSE": str(repo), "KATA_PROGRESS": str(base / "p.json")}
    done = subprocess.run([kata_exe(), "classroom", "workflow", "--katas", "9.1,9.2", "--repo", str(repo)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return {"base": base, "repo": repo, "env": env, "workflow": repo / ".github" / "workflows" / "classroom.yml"}


def run_step(step: dict, repo: Path, env: dict, output: Path) -> tuple[dict, str]:
    """Run a kata's step as Actions does (bash, $GITHUB_OUTPUT a file, in the repository): its result, decoded
    as the reporter decodes it, and its own log."""
    env = {**env, "PATH": f"{Path(kata_exe()).parent}{os.pathsep}{os.environ['PATH']}", "GITHUB_OUTPUT": str(output)}
    done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=repo, capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (line,) = output.read_text().splitlines()
    key, encoded = line.split("=", 1)
    assert key == "result"
    return json.loads(base64.b64decode(encoded)), done.stderr


def reporter_points(results: list[dict]) -> tuple[float, float]:
    """The points of classroom-resources/autograding-grading-reporter@v1 (dist/main.js), with its floats: its
    table gives each runner (passed tests / tests) * max_score and adds the runners up; its notice ("Points
    X/Y") adds up every test's score."""
    table = 0.0
    for result in results:
        table += sum(t["status"] == "pass" for t in result["tests"]) / len(result["tests"]) * result["max_score"]
    notice = 0.0
    for result in results:
        for test in result["tests"]:
            notice += test["score"]
    return table, notice


def test_the_workflow_is_valid_for_github(repo, tmp_path):
    checked = check_workflow_schema(repo["workflow"])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    pinned = subprocess.run([kata_exe(), "classroom", "workflow", "--katas", "9.1", "--repo", str(tmp_path),
                             "--course-repo", "prof/katas-grading", "--course-ref", "v2026.1"],
                            capture_output=True, text=True, env=repo["env"], timeout=60)
    assert pinned.returncode == 0, pinned.stderr
    checked = check_workflow_schema(tmp_path / ".github" / "workflows" / "classroom.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    broken = tmp_path / "broken.yml"  # the validator does reject a wrong workflow
    broken.write_text(repo["workflow"].read_text().replace("runs-on:", "runs_on:"))
    assert check_workflow_schema(broken).returncode != 0


def test_one_step_per_kata_then_the_reporter_reading_each(repo):
    workflow = yaml.safe_load(repo["workflow"].read_text())
    assert workflow["on"] == ["push", "repository_dispatch"] and workflow["permissions"]["checks"] == "write"
    steps = workflow["jobs"]["run-autograding-tests"]["steps"]
    graded = [s for s in steps if "kata classroom grade" in s.get("run", "")]
    assert [s["id"] for s in graded] == ["kata-9-1", "kata-9-2"]
    reporter = steps[-1]
    assert reporter["uses"] == "classroom-resources/autograding-grading-reporter@v1" and reporter["if"] == "always()"
    assert reporter["with"]["runners"] == "kata-9-1,kata-9-2"
    assert reporter["env"] == {f"{s['id'].upper()}_RESULTS": f"${{{{ steps.{s['id']}.outputs.result }}}}"
                               for s in graded}


def test_each_steps_points_are_kata_grades(repo, tmp_path):
    """Run each step's command as Actions does, add up the results as the reporter does (its table and its
    notice agree to the last bit), and compare with `kata grade` of the same repository."""
    workflow = yaml.safe_load(repo["workflow"].read_text())
    steps = [s for s in workflow["jobs"]["run-autograding-tests"]["steps"] if "classroom grade" in s.get("run", "")]
    results, logs = {}, {}
    for step in steps:
        results[step["id"]], logs[step["id"]] = run_step(step, repo["repo"], repo["env"], tmp_path / step["id"])
    for result in results.values():
        table, notice = reporter_points([result])
        assert table == notice  # the same float, not just close
    table, notice = reporter_points(list(results.values()))
    assert table == notice and sum(r["max_score"] for r in results.values()) == 20

    folder = repo["base"] / "class"
    shutil.copytree(repo["repo"], folder / "student")
    graded = subprocess.run([kata_exe(), "grade", str(folder), "--katas", "9.1,9.2", "--json", "--jobs", "2"],
                            capture_output=True, text=True, env=repo["env"], timeout=300)
    assert graded.returncode == 0, graded.stderr[-2000:]
    (student,) = json.loads(graded.stdout)["students"]
    assert notice == pytest.approx(student["total"], abs=1e-4) and student["total"] == round(7.5 + 10 * 9 / 24, 4)
    for grade in student["katas"]:
        result = results["kata-" + grade["kata"].replace(".", "-")]
        assert result["status"] == "fail" and grade["outcome"] == "failed"
        assert reporter_points([result])[1] == pytest.approx(grade["points"])
        # A check is as many tests as it weighs (9.2's weigh 1 or 2), each passing as the check did.
        units = [(c["status"] == "passed", c["title"]) for c in grade["checks"] for _ in range(int(c["weight"]))]
        assert [(t["status"] == "pass", t["name"].split(" [")[0]) for t in result["tests"]] == [
            (passed, f"{grade['kata']} {title}".split(" [")[0]) for passed, title in units]
    assert reporter_points([results["kata-9-1"]]) == (7.5, 7.5)  # 12 of 16: no float noise
    assert len(results["kata-9-2"]["tests"]) == 24 > len(student["katas"][1]["checks"])

    # The step's own log: the points as the reporter gives them, and each failed check's reason.
    _, no_max = expected_diagnosis(repo["repo"], "9.1", "no_max_subtraction")
    _, unbiased = expected_diagnosis(repo["repo"], "9.2", "unbiased_variance")
    log = logs["kata-9-1"]
    assert "9.1 Numerically stable softmax: failed, 7.5 of 10 points (12 of 16 checks passed)" in log
    failed = [c for c in student["katas"][0]["checks"] if c["status"] != "passed"]
    assert log.count(f"Looks like: {no_max}") == len(failed) == 4
    assert all(f"✗ {c['title']}: {c['message'].splitlines()[0]}" in log for c in failed)
    assert "9.2 Layer normalisation: failed, 3.75 of 10 points" in logs["kata-9-2"]
    assert f"Looks like: {unbiased}" in logs["kata-9-2"]
    assert all(f"Looks like: {no_max}" in t["message"] for t in results["kata-9-1"]["tests"] if t["status"] == "fail")
    shown = "\n".join([*logs.values(), *(t["message"] for r in results.values() for t in r["tests"])])
    assert not [line for line in grader_lines(repo["repo"]) if line in shown]


def test_a_step_that_timed_out_says_so(repo, tmp_path):
    student = tmp_path / "student-repo"
    shutil.copytree(repo["repo"], student)
    write(student / "exercises" / "9.1-softmax" / "exercise.py", HANG)
    step = next(s for s in yaml.safe_load(repo["workflow"].read_text())["jobs"]["run-autograding-tests"]["steps"]
                if s.get("id") == "kata-9-1")
    result, log = run_step(step, student, {**repo["env"], "KATA_COURSE": str(student)}, tmp_path / "out")
    (test,) = result["tests"]
    assert test["name"] == "9.1 Numerically stable softmax (timeout)" and test["status"] == "fail"
    assert test["message"].startswith("timeout") and reporter_points([result]) == (0, 0)
    assert log.startswith("9.1 Numerically stable softmax: timeout, 0 of 10 points\n  timeout")
    assert f"longer than {HANG_BUDGET} s" in log


def test_the_reporters_table_and_notice_agree_whatever_the_weights(repo):
    """Checks whose shares of the points add up with float noise (ten of 0.1 make 0.9999999999999999), and
    checks of unequal weights, which the table's count of passed tests would weigh alike."""
    kata = replace(load_course(repo["repo"]).find("9.1"), points=1)
    tenths = [{"id": f"c{i}", "title": f"check {i}", "status": "passed", "points": 0.1, "worth": 0.1, "weight": 1.0,
               "message": "", "diagnoses": []} for i in range(10)]
    assert sum(c["points"] for c in tenths) != 1  # what adding up the checks' points would say
    full = KataGrade("ann", "9.1", "passed", 1.0, 1.0, checks=tenths)
    assert reporter_points([classroom.result(kata, full)]) == (1.0, 1.0)
    weighed = [{**tenths[0], "weight": 2.0}, {**tenths[1], "status": "failed", "message": "wrong"}, tenths[2]]
    partial = classroom.result(kata, KataGrade("ann", "9.1", "failed", 0.75, 1.0, checks=weighed))
    assert [t["status"] for t in partial["tests"]] == ["pass", "pass", "fail", "pass"]
    assert reporter_points([partial]) == (0.75, 0.75)
