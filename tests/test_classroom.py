"""`kata classroom workflow`: the GitHub Classroom workflow, validated offline against GitHub's workflow
schema (check-jsonschema's vendored copy), and each kata step's command run here as Actions would run
it: the decoded points, check by check, are the ones `kata grade` gives the same repository."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import copy_course
from tests.test_cli import kata_exe
from tests.test_grade import planted, reference, write


def check_workflow_schema(path: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("check-jsonschema", path=str(Path(kata_exe()).parent))
    return subprocess.run([exe, "--builtin-schema", "vendor.github-workflows", str(path)], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A student's repository made from the template (the course), with their 9.1 (a planted mistake) and
    9.2 (right), and the workflow `kata classroom workflow` wrote into the template."""
    base = tmp_path_factory.mktemp("classroom")
    repo = copy_course(base / "student-repo")
    write(repo / "exercises" / "9.1-softmax" / "exercise.py", planted(repo, "9.1", "no_max_subtraction"))
    write(repo / "exercises" / "9.2-layer-norm" / "exercise.py", reference(repo, "9.2"))
    env = {**os.environ, "KATA_COURSE": str(repo), "KATA_PROGRESS": str(base / "p.json")}
    done = subprocess.run([kata_exe(), "classroom", "workflow", "--katas", "9.1,9.2", "--repo", str(repo)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return {"base": base, "repo": repo, "env": env, "workflow": repo / ".github" / "workflows" / "classroom.yml"}


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
    """Run each step's command as Actions does (bash, $GITHUB_OUTPUT a file, in the repository), decode
    the results as the reporter does, and compare with `kata grade` of the same repository."""
    workflow = yaml.safe_load(repo["workflow"].read_text())
    job = workflow["jobs"]["run-autograding-tests"]
    steps = [s for s in job["steps"] if "kata classroom grade" in s.get("run", "")]
    env = {**repo["env"], "PATH": f"{Path(kata_exe()).parent}{os.pathsep}{os.environ['PATH']}"}
    results = {}
    for step in steps:
        output = tmp_path / f"{step['id']}.out"
        done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=repo["repo"], capture_output=True, text=True,
                              env={**env, "GITHUB_OUTPUT": str(output)}, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        (line,) = output.read_text().splitlines()
        key, encoded = line.split("=", 1)
        assert key == "result"
        results[step["id"]] = json.loads(base64.b64decode(encoded))
    # The reporter: the tests' scores and the runners' max_scores, added up.
    total = sum(t["score"] for r in results.values() for t in r["tests"])
    maximum = sum(r["max_score"] for r in results.values())

    classroom = repo["base"] / "class"
    shutil.copytree(repo["repo"], classroom / "student")
    graded = subprocess.run([kata_exe(), "grade", str(classroom), "--katas", "9.1,9.2", "--json", "--jobs", "2"],
                            capture_output=True, text=True, env=repo["env"], timeout=300)
    assert graded.returncode == 0, graded.stderr[-2000:]
    (student,) = json.loads(graded.stdout)["students"]
    assert total == pytest.approx(student["total"]) and student["total"] == pytest.approx(17.5)
    assert maximum == 20
    for grade in student["katas"]:
        result = results["kata-" + grade["kata"].replace(".", "-")]
        assert result["status"] == ("pass" if grade["outcome"] == "passed" else "fail")
        assert [(t["status"], t["score"]) for t in result["tests"]] == [
            ("pass" if c["status"] == "passed" else "fail", c["points"]) for c in grade["checks"]]
