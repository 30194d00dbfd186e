"""Every command through click's test runner, and the real `kata` executable in a subprocess."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kata import progress as prog
from kata.cli import main
from kata.stubs import derive_stub
from tests.conftest import CORRECT_SOFTMAX


@pytest.fixture
def cli(course_root):
    runner = CliRunner()

    def invoke(*args, input=None):
        return runner.invoke(main, list(args), input=input, catch_exceptions=False)

    return invoke


def as_json(result, kind: str) -> dict:
    data = json.loads(result.output)
    assert data["schema"] == f"kata.{kind}/{2 if kind == 'check' else 1}"  # check/2: points earned, worth
    return data


def test_list_shows_every_kata_in_order(cli, course):
    result = cli("list")
    assert result.exit_code == 0
    positions = [result.output.index(k.id + " ") for k in course.katas[:9]]
    assert positions == sorted(positions)
    assert "not started" in result.output
    data = as_json(cli("list", "--json"), "list")
    assert [k["id"] for k in data["katas"]] == [k.id for k in course.katas]
    assert data["next"] == "9.1" and data["katas"][0]["progress"]["status"] == "not-started"


def test_show_renders_the_readme(cli):
    result = cli("show", "softmax")
    assert result.exit_code == 0 and "Kata 9.1" in result.output and "subtract" in result.output
    data = as_json(cli("show", "9.1", "--json"), "show")
    assert data["kata"]["id"] == "9.1" and data["readme"].startswith("# Kata 9.1")


def test_hints_come_one_tier_at_a_time_and_are_recorded(cli, course, course_root):
    tiers = len(course.find("9.1").hints)
    first = cli("hint", "9.1")
    assert "Hint 1 of 3" in first.output and "Hint 2" not in first.output
    second = as_json(cli("hint", "9.1", "--json"), "hint")
    assert second["tier"] == 2 and len(second["hints"]) == 2
    for _ in range(tiers):
        last = as_json(cli("hint", "9.1", "--json"), "hint")
    assert last["tier"] == tiers == len(last["hints"])
    assert prog.Progress(course_root / ".kata-progress.json").get("9.1").hints_used == tiers


def test_solution_asks_before_the_kata_is_passed(cli, course_root):
    declined = cli("solution", "9.1", input="n\n")
    assert declined.exit_code == 0 and "Not revealed" in declined.output and "amax" not in declined.output
    assert not prog.Progress(course_root / ".kata-progress.json").get("9.1").solution_revealed
    accepted = cli("solution", "9.1", input="y\n")
    assert "amax" in accepted.output and "BEGIN SOLUTION" not in accepted.output
    assert prog.Progress(course_root / ".kata-progress.json").get("9.1").solution_revealed


def test_solution_json_needs_yes_before_passing(cli):
    refused = cli("solution", "9.1", "--json")
    assert refused.exit_code == 2 and "--yes" in refused.output
    data = as_json(cli("solution", "9.1", "--json", "--yes"), "solution")
    assert "amax" in data["source"] and data["recorded"] is True


def test_reset_backs_up_and_restore_undoes(cli, course, course_root):
    kata = course.find("9.1")
    kata.exercise.write_text("my precious work\n")
    data = as_json(cli("reset", "9.1", "--json"), "reset")
    assert data["changed"] and Path(data["backup"]).read_text() == "my precious work\n"
    assert kata.exercise.read_text() == derive_stub(kata.solution.read_text())
    again = cli("reset", "9.1")
    assert "nothing to do" in again.output
    restored = as_json(cli("restore", "9.1", "--json"), "restore")
    assert kata.exercise.read_text() == "my precious work\n" and restored["restored_from"] == data["backup"]
    assert restored["backup"] is None, "the untouched stub needs no backup"


def test_restore_without_backups_is_a_usage_error(cli):
    result = cli("restore", "9.2")
    assert result.exit_code == 2 and "no backups of kata 9.2" in result.output


def test_restore_keeps_the_current_work_too(cli, course):
    kata = course.find("9.1")
    kata.exercise.write_text("version one\n")
    cli("reset", "9.1")
    kata.exercise.write_text("version two\n")
    data = as_json(cli("restore", "9.1", "--json"), "restore")
    assert kata.exercise.read_text() == "version one\n"
    assert Path(data["backup"]).read_text() == "version two\n"


def test_check_json_report_and_exit_code(cli, course_root):
    result = cli("check", "9.1", "--json")
    assert result.exit_code == 1
    data = as_json(result, "check")
    assert data["outcome"] == "not-implemented" and data["exit_code"] == 1
    assert data["cuda_verified"] is False and "log" not in data
    assert {"id", "title", "status", "message", "device", "dtype", "points", "diagnoses", "frames"} <= set(
        data["checks"][0])
    assert prog.Progress(course_root / ".kata-progress.json").get("9.1").attempts == 1


def test_check_pass_is_recorded_with_the_files_hash(cli, course, course_root):
    kata = course.find("9.1")
    kata.exercise.write_text(CORRECT_SOFTMAX)
    result = cli("check")  # no id: the next kata
    assert result.exit_code == 0, result.output
    assert "passed" in result.output and "CUDA not verified" in result.output
    state = prog.Progress(course_root / ".kata-progress.json").get("9.1")
    assert state.status == prog.PASSED and state.passed_hash == prog.file_hash(kata.exercise)
    assert as_json(cli("next", "--json"), "next")["kata"]["id"] == "9.2"
    progress = as_json(cli("progress", "--json"), "progress")
    assert (progress["passed"], progress["points"], progress["next"]) == (1, 10, "9.2")
    assert "1 of 10 katas passed" in cli("progress").output


def test_unknown_kata_is_a_usage_error(cli):
    result = cli("check", "9.99")
    assert result.exit_code == 2 and "no kata '9.99'" in result.output


def test_broken_course_is_a_usage_error_naming_the_problem(cli, course_root):
    (course_root / "solutions" / "9.1-softmax" / "solution.py").unlink()
    result = cli("list")
    assert result.exit_code == 2 and "missing file solutions/9.1-softmax/solution.py" in result.output


def test_doctor_reports_torch_cuda_course_and_progress(cli, course_root):
    result = cli("doctor", "--json")
    data = as_json(result, "doctor")
    names = {c["name"]: c for c in data["checks"]}
    assert names["torch"]["ok"] and names["import torch is quiet"]["ok"]
    assert "CUDA not verified" in names["CUDA"]["value"] or "available:" in names["CUDA"]["value"]
    assert str(course_root) in names["course"]["value"] and ".kata-progress.json" in names["progress file"]["value"]
    assert result.exit_code == 0


def test_stubs_reports_stale_exercises_and_rewrites_them(cli, course):
    assert cli("stubs").exit_code == 0
    kata = course.find("9.1")
    kata.exercise.write_text("edited\n")
    stale = cli("stubs")
    assert stale.exit_code == 1 and "stale:" in stale.output
    assert cli("stubs", "--write").exit_code == 0
    assert kata.exercise.read_text() == derive_stub(kata.solution.read_text())


def kata_exe() -> str:
    found = shutil.which("kata", path=os.path.dirname(sys.executable)) or shutil.which("kata")
    assert found, "the kata executable is installed with the package"
    return found


def test_real_executable_check_and_list(course_root):
    env = {**os.environ, "COLUMNS": "100"}
    listed = subprocess.run([kata_exe(), "list"], capture_output=True, text=True, env=env, timeout=60)
    assert listed.returncode == 0 and "Numerically stable softmax" in listed.stdout
    checked = subprocess.run([kata_exe(), "check", "9.1"], capture_output=True, text=True, env=env, timeout=120)
    assert checked.returncode == 1
    assert "not implemented yet" in checked.stdout and "exercises/9.1-softmax/exercise.py:" in checked.stdout
    report = subprocess.run([kata_exe(), "check", "softmax", "--json"], capture_output=True, text=True, env=env,
                            timeout=120)
    assert json.loads(report.stdout)["outcome"] == "not-implemented"


def test_real_executable_finds_the_course_from_a_subfolder(course_root, monkeypatch):
    monkeypatch.delenv("KATA_COURSE")
    folder = course_root / "exercises" / "9.1-softmax"
    result = subprocess.run([kata_exe(), "next"], capture_output=True, text=True, cwd=folder, timeout=60)
    assert result.returncode == 0 and "exercise.py" in result.stdout


def test_outside_a_course_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.delenv("KATA_COURSE", raising=False)
    result = subprocess.run([kata_exe(), "list"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert result.returncode == 2
    assert f"no course found (looked for course.toml in {tmp_path.resolve()} and above" in result.stderr
    assert "KATA_COURSE" in result.stderr and "not valid" not in result.stderr


NO_MAX_SOFTMAX = '''import torch


def softmax(x, dim=-1):
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)
'''


def test_an_absent_device_is_a_usage_error_and_records_nothing(cli, course, course_root, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU for the grading process, on any machine
    course.find("9.1").exercise.write_text(NO_MAX_SOFTMAX)
    result = cli("check", "9.1", "--device", "cuda")
    assert result.exit_code == 2, result.output
    assert "--device cuda" in result.output and "this machine has: cpu" in result.output, result.output
    assert "points" not in result.output and "passed" not in result.output, result.output
    assert not (course_root / ".kata-progress.json").exists()
    data = as_json(cli("check", "9.1", "--device", "cuda", "--json"), "check")
    assert (data["outcome"], data["exit_code"], data["checks"]) == ("device-unavailable", 2, [])
    assert data["recorded"] is False


def test_checking_another_file_leaves_the_katas_status_alone(cli, course, course_root, tmp_path):
    kata = course.find("9.1")
    kata.exercise.write_text(CORRECT_SOFTMAX)
    assert cli("check", "9.1").exit_code == 0
    before = prog.Progress(course_root / ".kata-progress.json").get("9.1")
    other = tmp_path / "other.py"
    other.write_text(NO_MAX_SOFTMAX)
    result = cli("check", "--file", str(other), "9.1")
    assert result.exit_code == 1 and "Not recorded in your progress: you checked another file" in result.output
    assert prog.Progress(course_root / ".kata-progress.json").get("9.1") == before
    data = as_json(cli("check", "--file", str(other), "9.1", "--json"), "check")
    assert data["recorded"] is False and data["points"] == 7.5
    # One meaning per name, as in `kata grade`: a check's points are those it earned, its worth what it can earn.
    failed = [c for c in data["checks"] if c["status"] != "passed"]
    assert failed and all(c["points"] == 0 and c["worth"] > 0 for c in failed)
    assert all(c["points"] == c["worth"] > 0 for c in data["checks"] if c["status"] == "passed")
    assert sum(c["points"] for c in data["checks"]) == pytest.approx(7.5)
    assert sum(c["worth"] for c in data["checks"]) == pytest.approx(data["max_points"])
    assert prog.Progress(course_root / ".kata-progress.json").get("9.1") == before
    # The kata's own file, named with --file, is a check of the kata like any other.
    assert as_json(cli("check", "--file", str(kata.exercise), "9.1", "--json"), "check")["recorded"] is True
    assert prog.Progress(course_root / ".kata-progress.json").get("9.1").attempts == before.attempts + 1


def test_help_groups_every_command_by_its_reader_the_students_first():
    from kata.cli import COMMAND_PANELS

    panels = [name for names in COMMAND_PANELS.values() for name in names]
    assert sorted(panels) == sorted(main.commands), "every command in one panel, and only commands"
    done = subprocess.run([kata_exe(), "--help"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    titles = re.findall(r"^╭─ (For [a-z ]+) ─", done.stdout, re.MULTILINE)
    assert titles == ["For students", "For instructors", "For course authors"]
    listed = re.findall(r"^│ ([a-z][a-z-]*) ", done.stdout, re.MULTILINE)
    assert listed == panels, "in each panel's order, each once"
    assert all(len(line) <= 80 for line in done.stdout.splitlines())
