"""Moving around the course: skip, goto, reset --all, edit, verify --progress, clickable paths.

Commands run in-process through click's runner, on a private copy of the course; none grades a file.
"""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kata import doctor, editor, outcomes, render, runner
from kata import progress as prog
from kata.cli import main
from kata.course import load_course
from kata.workspace import stub_text
from tests.conftest import CORRECT_SOFTMAX


def kata(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def progress_of(root: Path) -> prog.Progress:
    return prog.Progress(root / ".kata-progress.json")


def test_skip_records_skipped_not_passed_and_moves_on(course_root):
    result = kata("skip", "9.1", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["status"] == prog.SKIPPED and data["next"] == "9.2"
    state = progress_of(course_root).get("9.1")
    assert state.status == prog.SKIPPED and not state.passed_hash
    assert json.loads(kata("next", "--json").output)["kata"]["id"] == "9.2"
    assert progress_of(course_root).current() == "9.2"
    listing = json.loads(kata("list", "--json").output)
    assert listing["katas"][0]["progress"]["status"] == "skipped"
    points = json.loads(kata("progress", "--json").output)
    assert points["passed"] == 0 and points["points"] == 0


def test_skip_does_not_undo_a_pass(course_root):
    progress_of(course_root).record_check("9.1", True, course_root / "exercises" / "9.1-softmax" / "exercise.py")
    result = kata("skip", "9.1")
    assert "already passed" in result.output
    assert progress_of(course_root).get("9.1").status == prog.PASSED


def test_goto_sets_the_current_kata_for_watch_and_commands_without_an_id(course_root):
    result = kata("goto", "9.3", "--json")
    assert result.exit_code == 0 and json.loads(result.output)["kata"]["id"] == "9.3"
    raw = json.loads((course_root / ".kata-progress.json").read_text(encoding="utf-8"))
    assert raw["current"] == "9.3" and raw["schema"] == 1
    assert json.loads(kata("hint", "--json").output)["kata"] == "9.3"
    from kata.watch import Watcher

    watcher = Watcher(load_course(course_root), progress_of(course_root))
    assert watcher._current().id == "9.3"
    # Once the current kata is passed, commands without an ID go to the next one again.
    progress_of(course_root).record_check("9.3", True, course_root / "exercises" / "9.3-attention" / "exercise.py")
    assert json.loads(kata("hint", "--json").output)["kata"] == "9.1"


def test_goto_unknown_kata_is_a_usage_error(course_root):
    result = kata("goto", "9.99")
    assert result.exit_code == outcomes.EXIT_USAGE and "no kata '9.99'" in result.output


def test_reset_all_backs_up_everything_once(course_root):
    course = load_course(course_root)
    first, second = course.find("9.1"), course.find("9.2")
    first.exercise.write_text(CORRECT_SOFTMAX, encoding="utf-8")
    second.exercise.write_text("# my layer norm\n", encoding="utf-8")
    progress_of(course_root).record_check("9.1", True, first.exercise)
    result = kata("reset", "--all", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    folder = Path(data["backup"])
    assert folder.parent == course_root / ".kata-backups" and folder.name.startswith("all-")
    assert (folder / "exercises" / "9.1-softmax" / "exercise.py").read_text(encoding="utf-8") == CORRECT_SOFTMAX
    assert (folder / "exercises" / "9.2-layer-norm" / "exercise.py").read_text(encoding="utf-8") == "# my layer norm\n"
    assert (folder / ".kata-progress.json").is_file()
    assert len(list((course_root / ".kata-backups").iterdir())) == 1, "one backup folder for everything"
    for k in course.katas:
        assert k.exercise.read_text(encoding="utf-8") == stub_text(k)
    changed = {c["kata"] for c in data["katas"] if c["changed"]}
    assert changed == {"9.1", "9.2"}
    assert progress_of(course_root).get("9.1").status == prog.PASSED, "progress is kept"


def test_reset_needs_an_id_or_all(course_root):
    assert kata("reset").exit_code == outcomes.EXIT_USAGE
    assert kata("reset", "9.1", "--all").exit_code == outcomes.EXIT_USAGE


@pytest.fixture
def fake_editor(tmp_path):
    """A program that records the file it was asked to open."""
    log = tmp_path / "opened.txt"
    script = tmp_path / "fake-editor"
    script.write_text(f"#!{sys.executable}\nimport sys\n"
                      f"open({str(log)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script, log


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX script stands in for the editor")
def test_edit_opens_editor_then_visual(course_root, fake_editor, monkeypatch):
    script, log = fake_editor
    exercise = str(course_root / "exercises" / "9.1-softmax" / "exercise.py")
    monkeypatch.setenv("EDITOR", f"{script} --wait")
    assert kata("edit", "9.1").exit_code == 0
    assert log.read_text().splitlines()[-1] == f"--wait {exercise}"
    monkeypatch.delenv("EDITOR")
    monkeypatch.setenv("VISUAL", str(script))
    kata("goto", "9.2")
    assert kata("edit").exit_code == 0
    assert log.read_text().splitlines()[-1].endswith(os.path.join("9.2-layer-norm", "exercise.py"))


def test_edit_without_any_editor_is_a_clear_error(course_root, monkeypatch, tmp_path):
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = kata("edit", "9.1")
    assert result.exit_code == outcomes.EXIT_USAGE
    assert "no editor found: set EDITOR" in result.output


def test_edit_with_a_missing_editor_names_it(course_root, monkeypatch):
    monkeypatch.setenv("EDITOR", "no-such-editor-anywhere")
    result = kata("edit", "9.1")
    assert result.exit_code == outcomes.EXIT_USAGE and "'no-such-editor-anywhere' is not a program" in result.output


def test_verify_progress_accepts_proven_passes_and_flags_changed_files(course_root):
    exercise = course_root / "exercises" / "9.1-softmax" / "exercise.py"
    exercise.write_text(CORRECT_SOFTMAX, encoding="utf-8")
    progress_of(course_root).record_check("9.1", True, exercise)
    result = kata("verify", "--progress", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["katas"] == [
        {"kata": "9.1", "verdict": "ok", "detail": "", "recorded_hash": prog.file_hash(exercise),
         "file_hash": prog.file_hash(exercise)}]
    exercise.write_text(CORRECT_SOFTMAX + "# edited after passing\n", encoding="utf-8")
    result = kata("verify", "--progress")
    assert result.exit_code == 1 and "9.1 changed" in result.output and "kata check 9.1" in result.output


def test_the_editor_is_chosen_without_the_cli(monkeypatch, tmp_path):
    file = tmp_path / "exercise.py"
    monkeypatch.setenv("EDITOR", "no-such-editor-anywhere")
    with pytest.raises(editor.EditorError, match="'no-such-editor-anywhere' is not a program"):
        editor.editor_command(file)
    monkeypatch.setenv("EDITOR", f"{sys.executable} -u")
    assert editor.editor_command(file) == [sys.executable, "-u", str(file)]


def test_kata_run_as_a_module_needs_no_activation_hint():
    assert doctor.activation_hint(argv0="python") is None


def test_failure_locations_are_paths_an_editor_can_open(course_root, monkeypatch):
    """`path:line`, relative to the working folder when inside it, absolute otherwise."""
    from rich.console import Console

    course = load_course(course_root)
    k = course.find("9.1")
    frame = runner.Frame(str(k.exercise), 4, "softmax", "return x @ w")
    check = runner.Check("test_x", "Equal to torch.softmax", "error", "RuntimeError: boom", frames=[frame])
    result = runner.KataResult("9.1", str(k.exercise), runner.FAILED, "1 of 1", checks=[check])

    def shown() -> str:
        out = io.StringIO()
        render.check_result(Console(file=out, width=200), course, k, result)
        return out.getvalue()

    monkeypatch.chdir(course_root)
    assert os.path.join("exercises", "9.1-softmax", "exercise.py") + ":4" in shown()
    monkeypatch.chdir(course_root / "exercises" / "9.1-softmax")
    assert " exercise.py:4" in shown() or "\nexercise.py:4" in shown()
    monkeypatch.chdir(course_root.parent)
    assert os.path.join("course", "exercises", "9.1-softmax", "exercise.py") + ":4" in shown()
    elsewhere = course_root.parent / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # outside: "../course/..." would be fragile, so the absolute path
    assert f"{k.exercise}:4" in shown()


# ------------------------------------------------------------------------------ where the student stands


def pass_every_kata_but(root: Path, skipped: str) -> None:
    """Each kata recorded as passed with its file as it is, but `skipped`, recorded as skipped."""
    progress = progress_of(root)
    for k in load_course(root).katas:
        if k.id == skipped:
            progress.record_skip(k.id)
        else:
            progress.record_check(k.id, True, k.exercise)


def test_progress_with_a_kata_skipped_does_not_say_every_kata_is_passed(course_root):
    pass_every_kata_but(course_root, "9.8")
    out = kata("progress").output
    assert "9 of 10 katas passed" in out
    assert "Every kata is passed or skipped: 9.8 skipped (kata goto 9.8 goes back to it)." in out
    assert "The Transformer is yours" not in out and "Every kata is passed." not in out
    (course_root / ".kata-progress.json").unlink()
    pass_every_kata_but(course_root, "none")
    assert "Every kata is passed. The Transformer is yours." in kata("progress").output


def test_a_pass_whose_file_was_reset_shows_that_the_file_changed(course_root):
    course = load_course(course_root)
    exercise = course.find("9.5").exercise
    exercise.write_text(exercise.read_text(encoding="utf-8") + "\n# my solution\n", encoding="utf-8")
    progress_of(course_root).record_check("9.5", True, exercise)
    assert "file changed" not in kata("list").output
    assert kata("reset", "9.5").exit_code == 0
    listed = kata("list").output
    row = next(line for line in listed.splitlines() if " 9.5 " in line)
    assert "✓ passed, file changed" in row, listed
    assert "your exercise.py is not the file that passed" in " ".join(listed.split())
    data = json.loads(kata("list", "--json").output)
    assert [k["id"] for k in data["katas"] if k["file_changed_since_pass"]] == ["9.5"]
    assert progress_of(course_root).get("9.5").status == prog.PASSED, "the pass itself stands"


def test_the_progress_bar_and_its_text_share_one_line_of_80_columns(course_root):
    pass_every_kata_but(course_root, "9.8")
    screen = io.StringIO()
    course = load_course(course_root)
    console = render.Console(file=screen, width=80, force_terminal=True, color_system=None)
    render.progress_report(console, course, progress_of(course_root).load(), None)
    bar_line = screen.getvalue().splitlines()[1]
    assert bar_line.endswith("  9 of 10 katas passed · 160 of 170 points"), bar_line
    assert bar_line.startswith("━") and len(bar_line) <= 80


def test_next_names_the_sanity_checks_and_the_command_it_prints_runs(course_root):
    out = kata("next").output
    line = next(line for line in out.splitlines() if line.strip().startswith("try"))
    command = line.split()[1:3]
    assert command == ["python", "exercises/9.1-softmax/sanity.py"], line
    stub = subprocess.run([sys.executable, command[1]], cwd=course_root, capture_output=True, text=True, timeout=120)
    assert stub.returncode == 1 and "NotImplementedError" in stub.stderr
    course = load_course(course_root)
    course.find("9.1").exercise.write_text(CORRECT_SOFTMAX, encoding="utf-8")
    done = subprocess.run([sys.executable, command[1]], cwd=course_root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "shapes and sums look right" in done.stdout
    assert "try it: python exercises/9.1-softmax/sanity.py" in " ".join(kata("show", "9.1").output.split())
