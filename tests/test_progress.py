"""Progress: atomic, locked, versioned, and never lost to a corrupt file or two checks at once."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import warnings

import pytest

from kata import progress as prog


def test_records_checks_hints_and_reveals(tmp_path):
    exercise = tmp_path / "exercise.py"
    exercise.write_text("x = 1\n")
    store = prog.Progress(tmp_path / "progress.json")
    store.record_check("9.1", False, exercise)
    store.record_check("9.1", True, exercise)
    store.record_hint("9.1", 2)
    store.record_hint("9.1", 1)
    store.record_solution_revealed("9.2")
    store.record_skip("9.3")
    state = store.load()
    assert state["9.1"].status == prog.PASSED and state["9.1"].attempts == 2
    assert state["9.1"].first_passed and state["9.1"].hints_used == 2
    assert state["9.1"].passed_hash == prog.file_hash(exercise)
    assert state["9.2"].solution_revealed and state["9.3"].status == prog.SKIPPED
    raw = json.loads((tmp_path / "progress.json").read_text())
    assert raw["schema"] == prog.SCHEMA_VERSION and set(raw["katas"]) == {"9.1", "9.2", "9.3"}


def test_a_later_failure_shows_but_keeps_the_proof_of_the_pass(tmp_path):
    exercise = tmp_path / "exercise.py"
    exercise.write_text("good\n")
    store = prog.Progress(tmp_path / "progress.json")
    store.record_check("9.1", True, exercise)
    exercise.write_text("broken\n")
    store.record_check("9.1", False, exercise)
    state = store.get("9.1")
    assert state.status == prog.FAILING and state.first_passed and state.passed_hash


@pytest.mark.parametrize("content", ["{not json", '{"schema": 99, "katas": {}}', "[1, 2]",
                                     '{"schema": 1, "katas": ["9.1"]}'])
def test_corrupt_file_is_moved_aside_with_a_warning(tmp_path, content):
    path = tmp_path / "progress.json"
    path.write_text(content)
    store = prog.Progress(path)
    with pytest.warns(prog.ProgressWarning, match="moved it to progress.json.corrupt-"):
        assert store.load() == {}
    aside = list(tmp_path.glob("progress.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_text() == content
    store.record_hint("9.1", 1)
    assert store.get("9.1").hints_used == 1


def _hammer(path: str, kata_id: str, times: int) -> None:
    store = prog.Progress(prog.Path(path))
    exercise = prog.Path(path).with_name("exercise.py")
    for _ in range(times):
        store.record_check(kata_id, False, exercise)


def test_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "progress.json"
    (tmp_path / "exercise.py").write_text("x\n")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_hammer, args=(str(path), kid, 25)) for kid in ("9.1", "9.1", "9.2", "9.1")]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    state = prog.Progress(path).load()
    assert state["9.1"].attempts == 75 and state["9.2"].attempts == 25


def test_two_real_checks_at_once_both_count(course_root):
    kata = [sys.executable, "-m", "kata", "check", "9.1", "--json"]
    procs = [subprocess.Popen(kata, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [1, 1], outputs
    state = prog.Progress(course_root / ".kata-progress.json").load()
    assert state["9.1"].attempts == 2 and state["9.1"].status == prog.FAILING


def test_progress_file_location_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(prog.ENV_VARIABLE, str(tmp_path / "elsewhere.json"))
    assert prog.progress_path(tmp_path / "course") == tmp_path / "elsewhere.json"
    monkeypatch.delenv(prog.ENV_VARIABLE)
    assert prog.progress_path(tmp_path / "course") == tmp_path / "course" / prog.FILE_NAME


def test_one_invalid_value_costs_only_itself(tmp_path):
    path = tmp_path / "progress.json"
    good = {"status": "passed", "attempts": 3, "first_passed": "2026-11-22T10:15:00+00:00",
            "last_checked": "2026-11-22T10:15:00+00:00", "hints_used": 1, "solution_revealed": False,
            "passed_hash": "ab" * 32}
    path.write_text(json.dumps({"schema": 1, "current": "9.3", "katas": {
        "9.1": good,
        "9.2": {**good, "status": "awesome", "hints_used": -1},
        "9.3": "not an entry",
        "9.4": {"attempts": 2},
    }}))
    progress = prog.Progress(path)
    with pytest.warns(prog.ProgressWarning) as caught:
        states = progress.load()
    message = str(caught[0].message)
    assert '9.2 status "awesome"' in message and "9.2 hints_used -1" in message and "9.3: not an object" in message
    assert "9.1" not in message and "9.4" not in message
    assert states["9.1"] == prog.KataProgress(**good)
    assert states["9.2"] == prog.KataProgress(**{**good, "status": prog.NOT_STARTED, "hints_used": 0})
    assert "9.3" not in states and states["9.4"].attempts == 2
    assert progress.current() == "9.3"
    aside = list(tmp_path.glob("progress.json.invalid-*"))
    assert len(aside) == 1 and not list(tmp_path.glob("progress.json.corrupt-*"))
    kept = json.loads(aside[0].read_text())["invalid"]
    assert kept["9.2"]["fields"]["status"]["value"] == "awesome" and kept["9.3"]["value"] == "not an entry"
    # Set aside once: the file now holds only valid values, and reading it again warns no more.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert progress.load() == states
