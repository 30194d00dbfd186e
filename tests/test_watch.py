"""`kata watch`: in a real terminal (pexpect drives `kata watch` in a pseudo-terminal), and the
session's logic in-process with a fake grader.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kata import progress as prog
from kata import render, runner, watch
from kata.course import load_course
from kata.pool import Pool
from tests.conftest import CORRECT_SOFTMAX, alive, children_of, wait_until

pexpect = pytest.importorskip("pexpect")

TERMINAL = sys.platform != "win32"
TIMEOUT = 240  # a check under a loaded CI machine can take a while


def spawn(course_root: Path, *args: str):
    kata = shutil.which("kata", path=os.path.dirname(sys.executable))
    env = {**os.environ, "KATA_COURSE": str(course_root), "KATA_PROGRESS": str(course_root / ".kata-progress.json"),
           "NO_COLOR": "1", "TERM": "xterm", "COLUMNS": "110", "LINES": "60"}
    return pexpect.spawn(kata, ["watch", *args], cwd=str(course_root), env=env, encoding="utf-8",
                         dimensions=(60, 110), timeout=TIMEOUT)


@pytest.mark.skipif(not TERMINAL, reason="pseudo-terminals are POSIX")
def test_saving_a_fixed_file_changes_the_screen(course_root):
    """The stub is checked at once; saving a correct softmax re-checks it in place; n moves on; q quits."""
    child = spawn(course_root, "9.1")
    try:
        child.expect("kata watch")
        child.expect("not implemented yet")
        child.expect("watching for saves")
        exercise = course_root / "exercises" / "9.1-softmax" / "exercise.py"
        exercise.write_text(CORRECT_SOFTMAX, encoding="utf-8")
        child.expect("checking")
        child.expect(r"Kata 9\.1 passed")
        child.expect("Press n for the next kata: 9.2")
        child.send("n")
        child.expect(r"9\.2(\x1b\[[0-9;]*m)* Layer normalisation")
        child.expect("watching for saves")
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    states = prog.Progress(course_root / ".kata-progress.json").load()
    assert states["9.1"].status == prog.PASSED and states["9.1"].passed_hash == prog.file_hash(exercise)


@pytest.mark.skipif(not TERMINAL, reason="pseudo-terminals are POSIX")
def test_ctrl_c_cancels_the_check_not_the_session(course_root):
    child = spawn(course_root, "9.1")
    try:
        child.expect("checking")
        time.sleep(1.0)  # the grading process has started
        child.sendintr()
        child.expect("Check cancelled")
        child.expect("watching for saves")
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


@pytest.mark.skipif(not TERMINAL, reason="pseudo-terminals are POSIX")
def test_watch_starts_at_the_kata_chosen_with_goto(course_root):
    prog.Progress(course_root / ".kata-progress.json").set_current("9.2")
    child = spawn(course_root, "--poll")
    try:
        child.expect(r"9\.2(\x1b\[[0-9;]*m)* Layer normalisation")
        child.expect("polling every 0.5 s")
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        child.close()


# ---------------------------------------------------------------------------------------- in-process


class FakeGrader:
    """Stands in for runner.run_kata: passes once the file holds the correct softmax."""

    def __init__(self):
        self.calls = 0

    def __call__(self, course, kata, student=None, **kwargs):
        self.calls += 1
        path = kata.exercise
        passed = path.read_text(encoding="utf-8") == CORRECT_SOFTMAX
        outcome = runner.PASSED if passed else runner.NOT_IMPLEMENTED
        return runner.KataResult(kata.id, str(path), outcome, "all passed" if passed else "stub")


class Session:
    """A Watcher running in a thread, fed keys through a pipe, drawing into a string."""

    def __init__(self, course_root: Path, monkeypatch, *, poll=False, start=None, events=True):
        self.grader = FakeGrader()
        monkeypatch.setattr(watch.runner, "run_kata", self.grader)
        monkeypatch.setattr(watch.runner, "prepare_kata", lambda *a, **k: None)
        monkeypatch.setenv("KATA_POOL", "0")  # no zygote: nothing here grades for real
        if not events:  # a file system that sends no change events
            monkeypatch.setattr(watch._Saves, "run", lambda self: None)
        monkeypatch.setattr(watch, "MISSED_EVENT_S", 0.5)
        from rich.console import Console

        self.screen = io.StringIO()
        read, self.keys = os.pipe()
        course = load_course(course_root)
        self.progress = prog.Progress(course_root / ".kata-progress.json")
        self.watcher = watch.Watcher(course, self.progress, poll=poll, start=course.find(start) if start else None,
                                     console=Console(file=self.screen, width=110), stdin=os.fdopen(read, "r"))
        self.code = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        self.code = self.watcher.run()

    def press(self, key: str):
        os.write(self.keys, (key + "\n").encode())

    def wait_for(self, text: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.screen.getvalue():
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never shown; screen:\n{self.screen.getvalue()[-3000:]}")
            time.sleep(0.05)

    def quit(self):
        self.press("q")
        self.thread.join(10)
        assert not self.thread.is_alive() and self.code == 0


def test_a_save_without_an_event_is_checked_and_suggests_poll(course_root, monkeypatch):
    session = Session(course_root, monkeypatch, start="9.1", events=False)
    session.wait_for("watching for saves")
    exercise = course_root / "exercises" / "9.1-softmax" / "exercise.py"
    exercise.write_text(CORRECT_SOFTMAX, encoding="utf-8")
    os.utime(exercise, ns=(time.time_ns(), time.time_ns() + 10**9))
    session.wait_for("kata watch --poll")
    session.wait_for("Kata 9.1 passed")
    session.quit()


def test_poll_mode_sees_saves(course_root, monkeypatch):
    session = Session(course_root, monkeypatch, start="9.1", poll=True)
    session.wait_for("polling every 0.5 s")
    time.sleep(0.6)
    (course_root / "exercises" / "9.1-softmax" / "exercise.py").write_text(CORRECT_SOFTMAX, encoding="utf-8")
    session.wait_for("Kata 9.1 passed")
    assert "kata watch --poll" not in session.screen.getvalue()
    session.quit()


def test_hint_list_and_check_again_keys(course_root, monkeypatch):
    session = Session(course_root, monkeypatch, start="9.1")
    session.wait_for("watching for saves")
    session.press("h")
    session.wait_for("Hint 1 of 3")
    assert session.progress.get("9.1").hints_used == 1
    session.press("l")
    session.wait_for("l back")  # the list shows every kata
    assert "Layer normalisation" in last_screen(session.screen.getvalue())
    calls = session.grader.calls
    session.press("c")
    deadline = time.monotonic() + 10
    while session.grader.calls == calls and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session.grader.calls == calls + 1
    session.quit()


def test_moving_on_only_when_asked_and_saying_when_all_are_done(course_root, monkeypatch):
    progress = prog.Progress(course_root / ".kata-progress.json")
    course = load_course(course_root)
    for kata in course.katas[1:]:
        progress.record_skip(kata.id)
    session = Session(course_root, monkeypatch, start="9.1")
    session.wait_for("watching for saves")
    (course_root / "exercises" / "9.1-softmax" / "exercise.py").write_text(CORRECT_SOFTMAX, encoding="utf-8")
    session.wait_for("That was the last one: every kata is passed or skipped.")
    assert session.watcher.kata.id == "9.1", "the session stays on the kata until asked"
    session.press("n")
    session.wait_for("All katas are passed or skipped.")
    session.quit()


def test_a_prepared_check_grades_the_file_as_it_is_when_run(course, course_root):
    """What watch starts ahead of time: it reads the exercise only when run, and is used once."""
    kata = course.find("9.1")
    prepared = runner.prepare_kata(course, kata)
    try:
        kata.exercise.write_text("def softmax(x, dim=-1)\n", encoding="utf-8")
        refused = prepared.run()
        assert refused.outcome == runner.SYNTAX_ERROR and prepared.alive(), "refused before using the process"
        kata.exercise.write_text(CORRECT_SOFTMAX, encoding="utf-8")
        result = prepared.run(timeout=TIMEOUT)
        assert result.outcome == runner.PASSED, (result.message, result.log[-2000:])
        assert not prepared.alive() and prepared.run() is None
    finally:
        prepared.close()


# ------------------------------------------------------------------- what the screen says, and when

CLEAR = "\x1b[2J"


def last_screen(text: str) -> str:
    """What is on the screen since it was last cleared."""
    return text.rsplit(CLEAR, 1)[-1]


@pytest.mark.skipif(not TERMINAL, reason="pseudo-terminals are POSIX")
def test_a_cancelled_check_never_leaves_the_old_verdict_and_the_next_result_replaces_it(course_root):
    exercise = course_root / "exercises" / "9.1-softmax" / "exercise.py"
    exercise.write_text(CORRECT_SOFTMAX, encoding="utf-8")
    child = spawn(course_root, "9.1")
    child.logfile_read = log = io.StringIO()  # everything drawn, to find what is on screen now
    try:
        child.expect(r"Kata 9\.1 passed")
        child.expect("watching for saves")
        exercise.write_text("import torch\n\n\ndef softmax(x, dim=-1):\n    while True: pass\n", encoding="utf-8")
        child.expect("checking")
        time.sleep(1.0)  # the check is running
        child.sendintr()
        child.expect("Check cancelled")
        child.expect("watching for saves")
        screen = last_screen(log.getvalue())
        assert "Check cancelled" in screen, screen
        assert "runs passed" not in screen and "Kata 9.1 passed" not in screen, "no earlier verdict as current"
        exercise.write_text(CORRECT_SOFTMAX, encoding="utf-8")
        child.expect(r"Kata 9\.1 passed")
        child.expect("watching for saves")
        screen = last_screen(log.getvalue())
        assert "Check cancelled" not in screen, screen
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        child.close()


TMUX = TERMINAL and shutil.which("tmux") is not None


@pytest.mark.skipif(not TMUX, reason="needs tmux")
def test_on_80x24_the_title_verdict_first_failure_and_keys_fit(course_root):
    from tests.test_student_terminal import Tmux, kata_exe, terminal_env, unbiased_layer_norm

    unbiased_layer_norm(course_root)
    tmux = Tmux(f"{kata_exe()} watch 9.2", course_root, terminal_env(course_root), width=80, height=24)
    try:
        tmux.wait_for(r"runs passed", timeout=TIMEOUT)
        screen = tmux.wait_for(r"q quit", timeout=30)
        history = tmux.history()
        tmux.send("h")  # a hint asked for stays in view, with the verdict and the keys
        hinted = tmux.wait_for(r"Hint 1 of 3", timeout=30)
        tmux.send("q")
    finally:
        tmux.close()
    lines = screen.rstrip("\n").splitlines()
    assert len(lines) <= 23, "a line stays free for the cursor"
    assert lines[0] == "kata watch · 0/10 passed · 9.2 Layer normalisation"
    assert "Kata 9.2 · Layer normalisation · exercises/9.2-layer-norm/exercise.py" in screen
    assert "✗ Kata 9.2 failed · 9/22 runs passed" in screen
    assert "Looks like" in screen and "the variance divides by d - 1" in screen
    assert "layer_norm equals F.layer_norm" in screen  # the first failure
    assert "Next: fix it and save." in screen
    assert lines[-1].startswith("watching for saves · n next · h hint")
    # Nothing scrolled away: the screen is drawn to fit, the table of checks left out.
    assert "The output keeps the" not in history
    assert "failed · 9/22 runs passed" in hinted and "Press h for hint 2 of 3." in hinted
    assert hinted.splitlines()[0].startswith("kata watch · 0/10 passed")
    assert hinted.rstrip("\n").splitlines()[-1].startswith("watching for saves · n next")


@pytest.mark.skipif(not TMUX, reason="needs tmux")
def test_l_shows_the_list_in_place_of_the_report_and_o_says_its_state(course_root):
    from tests.test_student_terminal import Tmux, kata_exe, terminal_env, unbiased_layer_norm

    unbiased_layer_norm(course_root)
    tmux = Tmux(f"{kata_exe()} watch 9.2", course_root, terminal_env(course_root), width=80, height=24)
    try:
        report = tmux.wait_for(r"o output: off · c check · q quit", timeout=TIMEOUT)
        tmux.send("l")
        listed = tmux.wait_for(r"l back", timeout=30)
        tmux.send("l")
        back = tmux.wait_for(r"l list", timeout=30)
        tmux.send("o")
        shown = tmux.wait_for(r"o output: on", timeout=30)
        tmux.send("q")
    finally:
        tmux.close()
    lines = listed.rstrip("\n").splitlines()
    assert lines[0] == "kata watch · 0/10 passed · 9.2 Layer normalisation" and len(lines) <= 23
    assert all(f" {k} " in listed for k in ("9.1", "9.5", "9.10")), "every kata, one line each"
    assert "runs passed" not in listed and "Looks like" not in listed, "the list replaces the report"
    assert lines[-1].startswith("watching for saves · n next · h hint · l back · o output: off")
    assert back == report, "l again: the report as it was"
    assert "Your code printed, check by check" in shown, "o shows what the code printed, and says so"


@pytest.mark.skipif(not TERMINAL, reason="pseudo-terminals are POSIX")
def test_a_save_while_a_check_runs_restarts_it(course_root):
    """An infinite loop is being checked (a 60 s budget); the fix is saved: the loop's check is cancelled
    and the fix is checked at once, with no verdict of the old file."""
    from tests.test_student_terminal import LOOP

    exercise = course_root / "exercises" / "9.1-softmax" / "exercise.py"
    exercise.write_text(LOOP, encoding="utf-8")
    child = spawn(course_root, "9.1")
    child.logfile_read = log = io.StringIO()
    try:
        child.expect("Equal to torch.softmax")  # the live line: the loop's first check is running
        time.sleep(1.0)
        saved = time.monotonic()
        exercise.write_text(CORRECT_SOFTMAX, encoding="utf-8")
        child.expect("Saved while checking: the check starts again")
        child.expect(r"Kata 9\.1 passed")
        took = time.monotonic() - saved
        child.expect("watching for saves")
        screen = last_screen(log.getvalue())
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert took < load_course(course_root).find("9.1").time_budget_s / 2, took
    assert "timeout" not in log.getvalue() and "Check cancelled" not in log.getvalue()
    assert "kata watch --poll" not in screen, "the save was seen as a save"
    states = prog.Progress(course_root / ".kata-progress.json").load()
    assert states["9.1"].status == prog.PASSED and states["9.1"].attempts == 1, "the loop's check left no record"


@pytest.mark.skipif(not TERMINAL, reason="pseudo-terminals are POSIX")
def test_after_a_pass_the_next_step_and_the_keys_show_once(course_root):
    (course_root / "exercises" / "9.1-softmax" / "exercise.py").write_text(CORRECT_SOFTMAX, encoding="utf-8")
    child = spawn(course_root, "9.1")
    child.logfile_read = log = io.StringIO()
    try:
        child.expect(r"Kata 9\.1 passed")
        child.expect("q quit")
        time.sleep(0.5)
        screen = last_screen(log.getvalue())
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert screen.count("Press n for the next kata: 9.2") == 1, screen
    assert screen.count("watching for saves · n next") == 1, screen


def test_inside_watch_the_next_steps_are_keys(course_root, monkeypatch):
    session = Session(course_root, monkeypatch, start="9.1")
    session.wait_for("press h to reveal hint 1 of 3")
    session.press("h")
    session.wait_for("Press h for hint 2 of 3")
    session.press("h")
    session.press("h")
    session.wait_for("That was the last hint: there is no next one.")
    screen = session.screen.getvalue()
    assert "kata hint" not in screen and "kata next" not in screen and "kata solution" not in screen
    session.quit()


# ------------------------------------------------------------------------------------ the warm pool

SLOW_FIRST_CALL = CORRECT_SOFTMAX.replace("import torch\n", "import time\n\nimport torch\n").replace(
    "def softmax(x, dim=-1):\n",
    "_calls = []\n\n\ndef softmax(x, dim=-1):\n    if not _calls:  # time to kill the zygote mid-check\n"
    "        _calls.append(1)\n        time.sleep(3)\n")


def parent_of(pid: int) -> int:
    return int(subprocess.run(["ps", "-o", "ppid=", "-p", str(pid)], capture_output=True, text=True).stdout)


def pooled_watcher(course, course_root, pool) -> watch.Watcher:
    """A session's grading parts (no screen, no loop): its pool, its kata, its prepared process."""
    from rich.console import Console

    progress = prog.Progress(course_root / ".kata-progress.json")
    watcher = watch.Watcher(course, progress, console=Console(file=io.StringIO()))
    watcher.pool, watcher.kata = pool, course.find("9.1")
    return watcher


def test_watch_forks_its_prepared_process_from_the_zygote_and_grades_as_a_cold_check(course, course_root):
    from kata.verify import with_mistake
    from tests.test_pool import summary

    kata = course.find("9.1")
    solution = kata.solution.read_text(encoding="utf-8")
    mistake = kata.mistakes()[0]
    bodies = {"reference": solution, "stub": kata.exercise.read_text(encoding="utf-8"),
              mistake.stem: with_mistake(solution, mistake.read_text(encoding="utf-8"), mistake.name)}
    with Pool(course, 1) as pool:
        [zygote] = pool.pids()
        watcher = pooled_watcher(course, course_root, pool)
        try:
            for name, body in bodies.items():
                watcher._prepare()
                assert parent_of(watcher.prepared._run.child.pid) == zygote
                kata.exercise.write_text(body, encoding="utf-8")  # saved after the process was prepared
                watched = watcher._grade(kata)
                cold = runner.run_kata(course, kata, timeout=TIMEOUT)
                assert summary(watched) == summary(cold), name
        finally:
            watcher._unprepare()
        assert pool.pids() == [zygote]


def test_a_zygote_that_dies_during_a_watched_check_costs_the_student_nothing(course, course_root):
    """Its unit goes with it: the check is graded again, by a unit of a fresh zygote, and counted once."""
    kata = course.find("9.1")
    kata.exercise.write_text(SLOW_FIRST_CALL, encoding="utf-8")
    with Pool(course, 1) as pool:
        [zygote] = pool.pids()
        watcher = pooled_watcher(course, course_root, pool)
        watcher._prepare()
        killed = threading.Event()

        def kill_the_zygote_at_the_first_check(record):
            if record["event"] == "begin" and not killed.is_set():
                killed.set()
                os.kill(zygote, signal.SIGKILL)

        try:
            progress = render.CheckProgress(watcher.console, kata)
            events = []
            result = watcher._grade(kata, lambda r: (progress.event(r), events.append(r),
                                                     kill_the_zygote_at_the_first_check(r)))
        finally:
            watcher._unprepare()
        assert killed.is_set()
        assert result.outcome == runner.PASSED, (result.message, result.log[-2000:])
        assert sum(e["event"] == "import" for e in events) == 2, "graded a second time"
        assert progress.done == len(result.checks) == progress.total, "the live count starts again"
        [fresh] = pool.pids()
        assert fresh != zygote


def test_ctrl_c_while_the_zygote_starts_leaves_the_pool_usable(course, course_root):
    """A Ctrl-C between asking the zygote for a unit and its answer: the zygote, out of step, is replaced."""
    kata = course.find("9.1")
    kata.exercise.write_text(CORRECT_SOFTMAX, encoding="utf-8")
    with Pool(course, 1) as pool:
        [zygote] = pool.pids()  # still importing torch: the answer takes a second or more
        watcher = pooled_watcher(course, course_root, pool)
        main = threading.get_ident()
        threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT)).start()
        with pytest.raises(KeyboardInterrupt):
            watcher._prepare()
        try:
            result = watcher._grade(kata)
        finally:
            watcher._unprepare()
        assert result.outcome == runner.PASSED, (result.message, result.log[-2000:])
        assert zygote not in pool.pids()


@pytest.mark.skipif(not TERMINAL, reason="pseudo-terminals are POSIX")
def test_kata_watch_recovers_from_a_killed_zygote_and_leaves_no_process(course_root):
    exercise = course_root / "exercises" / "9.1-softmax" / "exercise.py"
    child = spawn(course_root, "9.1")
    child.logfile_read = log = io.StringIO()
    try:
        child.expect("not implemented yet")
        child.expect("watching for saves")
        [zygote] = wait_until(lambda: children_of(child.pid, "kata.grading.zygote"), "a zygote")
        [unit] = wait_until(lambda: children_of(zygote), "the prepared process, forked from the zygote")
        exercise.write_text(CORRECT_SOFTMAX, encoding="utf-8")
        child.expect("checking")
        child.expect(r"Kata 9\.1 passed")
        child.expect("watching for saves")
        [unit] = wait_until(lambda: children_of(zygote), "the next prepared process")
        os.kill(zygote, signal.SIGKILL)  # between checks
        exercise.write_text(CORRECT_SOFTMAX + "\n# saved again\n", encoding="utf-8")
        child.expect("checking")
        child.expect(r"Kata 9\.1 passed")
        child.expect("watching for saves")
        screen = last_screen(log.getvalue())
        assert "SIGKILL" not in screen and "crash" not in screen.lower(), screen
        [fresh] = wait_until(lambda: children_of(child.pid, "kata.grading.zygote"), "a fresh zygote")
        assert fresh != zygote
        [last] = wait_until(lambda: children_of(fresh), "a prepared process from the fresh zygote")
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    for pid in (zygote, unit, fresh, last):  # each unit leads its own process group
        assert wait_until(lambda pid=pid: not alive(pid), f"process {pid} ended", timeout=10)
    states = prog.Progress(course_root / ".kata-progress.json").load()
    assert states["9.1"].status == prog.PASSED and states["9.1"].attempts == 3

