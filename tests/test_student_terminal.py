"""What a student sees in a terminal while checking: the live line, where a timeout happened, what their
code printed, rows of points that add up, one box per recognised mistake, and the edges (the kata of the
folder you are in, no course, the first run before the environment is activated, notebooks).

The terminal ones run the real `kata` executable in tmux (an 80x24 screen read back with capture-pane)
or under pexpect; the rest run it as a subprocess, or the grading runner itself.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from kata import render, runner
from kata.course import load_course
from kata.runner import Check, KataResult
from tests.conftest import CORRECT_SOFTMAX, REPO

TMUX = shutil.which("tmux") is not None and sys.platform != "win32"
# The loop on one line: the line a stack sample names does not depend on where in the loop it lands.
LOOP = "import torch\n\n\ndef softmax(x, dim=-1):\n    n = 0\n    while True: n += 1\n"


def kata_exe() -> str:
    found = shutil.which("kata", path=os.path.dirname(sys.executable))
    assert found, "the kata executable is installed with the package"
    return found


def run_kata(*args: str, cwd: Path, env: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "120", **(env or {})}
    return subprocess.run([kata_exe(), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)


def unbiased_layer_norm(root: Path) -> Path:
    """The 9.2 exercise with the variance divided by d - 1, the classic mistake."""
    source = (REPO / "solutions" / "9.2-layer-norm" / "solution.py").read_text(encoding="utf-8")
    source = re.sub(r"\s*### (BEGIN|END) SOLUTION", "", source)
    wrong = "var = x.var(dim=-1, keepdim=True)  # unbiased"
    source = source.replace("var = (centred**2).mean(dim=-1, keepdim=True)", wrong, 1)
    assert wrong in source
    path = root / "exercises" / "9.2-layer-norm" / "exercise.py"
    path.write_text(source, encoding="utf-8")
    return path


def set_budget(root: Path, kata_id: str, seconds: int) -> None:
    """Give a kata of the test's course copy a shorter time budget."""
    toml = root / "course.toml"
    text = toml.read_text(encoding="utf-8")
    start = text.index(f'id = "{kata_id}"')
    budget = re.compile(r"time_budget_s = \d+")
    found = budget.search(text, start)
    toml.write_text(text[:found.start()] + f"time_budget_s = {seconds}" + text[found.end():], encoding="utf-8")
    assert load_course(root).find(kata_id).time_budget_s == seconds


# ------------------------------------------------------------------------------------------ tmux


class Tmux:
    """A detached tmux session of a given size running one command, on a tmux server of its own (nothing
    shared with the user's sessions or another test's); `screen()` is what a person sees."""

    def __init__(self, command: str, cwd: Path, env: dict[str, str], width: int = 80, height: int = 24):
        self.name = f"kata-test-{uuid.uuid4().hex[:8]}"
        exports = " ".join(f"{k}={shell_quote(v)}" for k, v in env.items())
        # The shell stays after the command so that its last screen can be read.
        script = f"cd {shell_quote(str(cwd))} && env {exports} {command}; echo '[exited '$?']'; sleep 600"
        self.tmux = ["tmux", "-L", self.name, "-f", os.devnull]
        subprocess.run([*self.tmux, "new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height),
                        "bash", "-c", script], check=True)

    def screen(self) -> str:
        return subprocess.run([*self.tmux, "capture-pane", "-p", "-t", self.name], capture_output=True,
                              text=True, check=True).stdout

    def history(self) -> str:
        """The screen and everything that scrolled above it."""
        return subprocess.run([*self.tmux, "capture-pane", "-p", "-S", "-", "-t", self.name], capture_output=True,
                              text=True, check=True).stdout

    def send(self, *keys: str) -> None:
        subprocess.run([*self.tmux, "send-keys", "-t", self.name, *keys], check=True)

    def wait_for(self, pattern: str, timeout: float = 180, every: float = 0.1) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if re.search(pattern, screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} never on screen:\n{screen}")
            time.sleep(every)

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)


def shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def terminal_env(root: Path) -> dict[str, str]:
    return {"KATA_COURSE": str(root), "KATA_PROGRESS": str(root / ".kata-progress.json"), "TERM": "xterm-256color",
            "PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}


@pytest.mark.skipif(not TMUX, reason="needs tmux")
def test_live_line_while_checking_then_the_report_in_its_place(course_root):
    unbiased_layer_norm(course_root)
    tmux = Tmux(f"{kata_exe()} check 9.2", course_root, terminal_env(course_root))
    try:
        live = tmux.wait_for(r"Kata 9\.2 · \d+/\d+ runs", every=0.05)
        line = next(row for row in live.splitlines() if "Kata 9.2 ·" in row)
        assert re.search(r"Kata 9\.2 · \d+/22 runs( · \d+ not passed)? · \d+\.\d s · \S", line), line
        final = tmux.wait_for(r"\[exited 1\]")
    finally:
        tmux.close()
    assert "failed · 9/22 runs passed" in final
    assert not re.search(r"Kata 9\.2 · \d+/\d+ runs", final), "the live line leaves nothing behind"


@pytest.mark.skipif(not TMUX, reason="needs tmux")
def test_a_timeout_in_a_terminal_shows_the_line_that_was_running(course_root):
    set_budget(course_root, "9.1", 8)
    (course_root / "exercises" / "9.1-softmax" / "exercise.py").write_text(LOOP, encoding="utf-8")
    tmux = Tmux(f"{kata_exe()} check 9.1", course_root, terminal_env(course_root), width=100, height=30)
    try:
        final = tmux.wait_for(r"\[exited 3\]", timeout=120)
    finally:
        tmux.close()
    assert "timeout" in final and "ran longer than 8 s" in final
    assert "When time ran out, your code was at line 6 (softmax)." in " ".join(final.replace("│", " ").split())
    assert "exercises/9.1-softmax/exercise.py:6 in softmax" in final and "while True: n += 1" in final


def test_quiet_when_not_a_terminal_and_under_json(course_root):
    plain = run_kata("check", "9.1", cwd=course_root)
    assert plain.returncode == 1 and "not implemented yet" in plain.stdout
    assert not re.search(r"Kata 9\.1 · \d+(/\d+)? runs", plain.stdout + plain.stderr)
    assert "\x1b" not in plain.stdout
    as_json = run_kata("check", "9.1", "--json", cwd=course_root)
    assert json.loads(as_json.stdout)["outcome"] == "not-implemented" and as_json.stderr == ""


# ------------------------------------------------------------------------------------ the runner


def test_the_results_arrive_while_the_check_runs_and_a_timeout_says_where(course):
    """The live line's records come as the judge writes them (the check that hangs began seconds before
    the budget ran out), and the timeout names the student's line from the student's process's stack at that
    moment."""
    path = course.root / "exercises" / "9.1-softmax" / "exercise.py"
    path.write_text(LOOP, encoding="utf-8")
    seen: list[tuple[float, dict]] = []
    result = runner.run_kata(course, course.find("9.1"), timeout=10,
                             on_event=lambda record: seen.append((time.monotonic(), record)))
    returned = time.monotonic()
    assert result.outcome == runner.TIMEOUT
    kinds = [record["event"] for _, record in seen]
    assert kinds[:3] == ["session", "import", "begin"]
    gone = next(record for _, record in seen if record["event"] == "gone")  # with the stack the student's process sent
    assert gone["kind"] == "timeout" and gone["stack_seen"] is True
    began, first = next((t, r) for t, r in seen if r["event"] == "begin")
    assert first["title"].startswith("Equal to torch.softmax") and first["title"] in result.message
    assert returned - began > 2, "the begin record came while the check ran, not at the end"
    frames = [(f.file, f.line, f.function, f.code) for f in result.frames]
    assert frames == [(str(path), 6, "softmax", "while True: n += 1")]
    assert "your code was at line 6 (softmax)" in result.message


def test_a_timeout_names_each_of_the_students_frames_and_no_grader_frame(course):
    path = course.root / "exercises" / "9.1-softmax" / "exercise.py"
    path.write_text("import torch\n\n\ndef spin():\n    while True: pass\n\n\n"
                    "def softmax(x, dim=-1):\n    return spin()\n", encoding="utf-8")
    result = runner.run_kata(course, course.find("9.1"), timeout=8)
    assert result.outcome == runner.TIMEOUT
    assert [(f.line, f.function, f.code) for f in result.frames] == [(9, "softmax", "return spin()"),
                                                                       (5, "spin", "while True: pass")]
    assert all(f.file == str(path) for f in result.frames)


# ---------------------------------------------------------------------------------- the report


def test_rows_add_up_one_box_per_mistake_and_parameters_are_not_blamed(course_root):
    """9.2 with the unbiased variance: the parameters check passes (the parameters are right); the
    mistake is explained once, naming its checks; rows add up to the totals under them."""
    unbiased_layer_norm(course_root)
    done = run_kata("check", "9.2", cwd=course_root)
    out = done.stdout
    assert done.returncode == 1, out
    assert re.search(r"✓\s+Parameters gamma \(ones\) and beta \(zeros\)", out), out
    assert out.count("the variance divides by d - 1") == 1
    assert out.count("Looks like") == out.count("Seen in"), "every box names the checks it covers"
    assert re.search(r"Seen in \d+ checks: layer_norm equals F\.layer_norm", out)
    assert_rows_add_up(out)


def assert_rows_add_up(out: str) -> None:
    """The table's runs, points earned and points of worth add up to the verdict's totals."""
    rows = re.findall(r"^ [✓✗!…⊘↷⚠] .*?(\d+)/(\d+)\s+(?:([\d.]+)/)?([\d.]+) pt\s*$", out, re.MULTILINE)
    assert len(rows) >= 10, out
    footer = re.search(r"(\d+)/(\d+) runs passed · ([\d.]+) of ([\d.]+) points", out)
    passed, runs, points, max_points = footer.groups()
    assert sum(int(r[0]) for r in rows) == int(passed) and sum(int(r[1]) for r in rows) == int(runs)
    earned = sum(float(r[2]) if r[2] else float(r[3]) for r in rows)
    cap = re.search(r"^ !\s+capped .*?−([\d.]+) pt\s*$", out, re.MULTILINE)  # a failed critical check's row
    earned -= float(cap.group(1)) if cap else 0.0
    assert round(earned, 2) == float(points) and round(sum(float(r[3]) for r in rows), 2) == float(max_points)


def test_rows_add_up_where_rows_that_passed_and_rows_that_failed_round_apart(course_root, course):
    """9.7 with the source padding mask ignored: rows whose points once added to 9.67 under "9.68"; a critical
    check fails now, so the rounded rows and the cap's own row add up to the 8 points under them."""
    from kata.verify import with_mistake

    kata = course.find("9.7")
    mistake = kata.mistakes_dir / "src_mask_ignored.py"
    kata.exercise.write_text(with_mistake(kata.solution.read_text(encoding="utf-8"),
                                          mistake.read_text(encoding="utf-8"), mistake.name), encoding="utf-8")
    done = run_kata("check", "9.7", cwd=course_root)
    assert done.returncode == 1 and "8 of 20 points" in done.stdout and "capped at 40%" in done.stdout, done.stdout
    assert_rows_add_up(done.stdout)


def test_the_report_speaks_the_courses_words_not_pytests_or_hypothesiss(course_root):
    """A softmax without keepdim: torch's broadcast error gets its classic cause, Hypothesis's failing
    example is the smallest input that fails, and no pytest id reaches the student."""
    (course_root / "exercises" / "9.1-softmax" / "exercise.py").write_text(
        "import torch\n\n\ndef softmax(x, dim=-1):\n    e = torch.exp(x - x.amax(dim=dim))\n"
        "    return e / e.sum(dim=dim)\n", encoding="utf-8")
    done = run_kata("check", "9.1", "--full", cwd=course_root)
    out = " ".join(done.stdout.replace("│", " ").split())
    assert done.returncode == 1, done.stdout
    assert "keep it with keepdim=True" in out
    assert "The smallest input that fails: x = tensor([[" in out and "dim = 1" in out
    assert "Failing test case" not in out and "Draw 1" not in out and "data(...)" not in out
    assert not re.search(r"\btest_\w+", out), "no pytest name"
    # Without --full: one failure in detail, the nine others of the same cause in one line.
    short = " ".join(run_kata("check", "9.1", cwd=course_root).stdout.replace("│", " ").split())
    assert short.count("╭─ !") == 1
    assert re.search(r"Also failing: dim defaults to -1; Logits of magnitude 1e4 give finite probabilities; and 7 "
                     r"more \(RuntimeError\)", short), short
    assert "Next: fix it and check again (all 10 failures: kata check 9.1 --full)." in short


def test_hypothesis_and_pytest_wording_in_the_courses_words():
    from kata.wording import course_words

    shrunk = ("AssertionError: rows do not sum to 1\nFailing test case: test_is_a_distribution(\n"
              "    x=tensor([[ 1.0000,  2.0000],\n            [ 3.0000,  4.0000]], dtype=torch.float64),\n"
              "    data=data(...),\n)\nDraw 1 (dim): 0\nDraw 2: 0.5")
    assert course_words(shrunk) == (
        "AssertionError: rows do not sum to 1\nThe smallest input that fails:\n"
        "    x = tensor([[ 1.0000,  2.0000],\n                [ 3.0000,  4.0000]], dtype=torch.float64)\n"
        "    dim = 0\n    value 2 drawn = 0.5")
    timeout = ('ran longer than 8 s, the kata\'s time budget (during check test_matches_torch_softmax[cpu-float32]: '
               '"Equal to torch.softmax [cpu-float32]"): an infinite loop?')
    assert course_words(timeout) == ('ran longer than 8 s, the kata\'s time budget (during the check '
                                     '"Equal to torch.softmax [cpu-float32]"): an infinite loop?')
    assert course_words("output differs") == "output differs"


@pytest.mark.skipif(not TMUX, reason="needs tmux")
def test_on_80x24_a_failing_check_ends_with_what_to_do(course_root):
    """One mistake in 9.2 fails 8 checks: what stays on an 80x24 screen is the verdict, the mistake named,
    the first failure (cut to fit) and the next step; the rest of the failures are one flag away."""
    unbiased_layer_norm(course_root)
    tmux = Tmux(f"{kata_exe()} check 9.2", course_root, terminal_env(course_root))
    try:
        screen = tmux.wait_for(r"\[exited 1\]")
    finally:
        tmux.close()
    lines = screen.rstrip("\n").splitlines()
    assert lines[-1] == "[exited 1]" and len(lines) <= 24
    assert "╭─ Looks like" in screen and "the variance divides by d - 1" in screen
    assert "╭─ ✗ layer_norm equals F.layer_norm" in screen, "the first failure, its box whole"
    assert screen.count("╭─ ✗") == 1 and screen.count("╰") == 2, "one failure in detail, every box closed"
    assert "✗ Kata 9.2 failed · 9/22 runs passed · 3.75 of 10 points" in screen
    assert "Next: fix it and check again (all 8 failures: kata check 9.2 --full)." in screen
    assert "Stuck? kata hint 9.2 reveals hint 1 of 3." in screen


def test_apportioned_points_add_up_to_the_rounded_total():
    worth = [1.2] * 6 + [0.62] * 4  # the rows of the report that added up to 9.68 beside a total of 10
    scaled = [w * 10 / sum(worth) for w in worth]
    shown = render.apportion(scaled)
    assert round(sum(shown), 2) == 10.0 and all(abs(s - v) < 0.01 for s, v in zip(shown, scaled, strict=True))
    thirds = render.apportion([10 / 3] * 3)
    assert sorted(thirds) == [3.33, 3.33, 3.34]
    assert render.points_text(3.5) == "3.5" and render.points_text(10) == "10" and render.points_text(0.0) == "0"


def test_a_row_with_several_runs_says_how_many_passed():
    from io import StringIO

    from rich.console import Console

    course = load_course(REPO)
    kata = course.find("9.1")
    checks = [Check("a[cpu-float32]", "Equal [cpu-float32]", "passed", points=2.5),
              Check("a[cpu-float64]", "Equal [cpu-float64]", "failed", "differs", points=2.5),
              Check("b", "Sums to one", "passed", points=5.0)]
    result = KataResult("9.1", str(kata.exercise), runner.FAILED, checks=checks, points=7.5, max_points=10,
                        complete=True)
    screen = StringIO()
    render.check_result(Console(file=screen, width=100), course, kata, result)
    out = screen.getvalue()
    assert re.search(r"✗\s+Equal\s+✓ cpu-float32 ✗ cpu-float64\s+1/2\s+2\.5/5 pt", out), out
    assert re.search(r"✓\s+Sums to one\s+1/1\s+5 pt", out), out
    assert "2/3 runs passed · 7.5 of 10 points" in out


def test_what_the_student_printed_is_shown_or_said_to_be_captured(course_root):
    printing = CORRECT_SOFTMAX.replace("import torch\n", "import torch\n\nprint('hello from the import')\n", 1)
    printing = printing.replace("    e = torch.exp", "    print('inside softmax')\n    e = torch.exp", 1)
    path = course_root / "exercises" / "9.1-softmax" / "exercise.py"
    path.write_text(printing, encoding="utf-8")
    passed = run_kata("check", "9.1", cwd=course_root)
    assert passed.returncode == 0, passed.stdout
    assert "Your module printed when imported" in passed.stdout and "hello from the import" in passed.stdout
    # The command that shows it names the kata (without it, `kata check` checks the current kata).
    assert re.search(r"Your code printed in \d+ more checks: kata check 9\.1 --show-output\.", passed.stdout)
    assert "inside softmax" not in passed.stdout
    shown = run_kata("check", "9.1", "--show-output", cwd=course_root)
    assert "Your code printed, check by check" in shown.stdout and "inside softmax" in shown.stdout
    # On a failure, the import's output is shown too (it used to vanish).
    path.write_text(printing.replace("return e / e.sum(dim=dim, keepdim=True)", "return e"), encoding="utf-8")
    failed = run_kata("check", "9.1", cwd=course_root)
    assert failed.returncode == 1 and "hello from the import" in failed.stdout


# --------------------------------------------------------------------------------------- edges


def test_check_inside_a_kata_folder_means_that_kata(course_root):
    folder = course_root / "exercises" / "9.3-attention"
    done = run_kata("check", "--json", cwd=folder)
    assert json.loads(done.stdout)["kata"] == "9.3"
    nested = folder / "viz"
    nested.mkdir()
    assert json.loads(run_kata("check", "--json", cwd=nested).stdout)["kata"] == "9.3"


def test_the_first_run_by_path_says_how_to_activate(course_root):
    exe = Path(kata_exe())
    bare = run_kata("next", cwd=course_root, env={"PATH": "/usr/bin:/bin"})
    assert bare.returncode == 0 and "kata check 9.1" in bare.stdout
    activate = Path(os.path.relpath(Path(sys.prefix) / "bin" / "activate", course_root))
    assert f"run `source {activate}` first" in " ".join(bare.stdout.split())
    on_path = run_kata("next", cwd=course_root, env={"PATH": f"{exe.parent}:/usr/bin:/bin"})
    assert on_path.returncode == 0 and "activate" not in on_path.stdout


def test_notebook_goes_into_the_kata_folder_and_is_ignored_by_git(course_root):
    pytest.importorskip("nbformat")
    shutil.copy2(REPO / ".gitignore", course_root / ".gitignore")
    done = run_kata("notebook", "9.2", cwd=course_root, timeout=120)
    assert done.returncode == 0, done.stderr
    folder = course_root / "exercises" / "9.2-layer-norm"
    assert (folder / "9.2-layer-norm.ipynb").is_file() and not list(course_root.glob("*.ipynb"))
    assert "exercises/9.2-layer-norm/9.2-layer-norm.ipynb" in done.stdout
    subprocess.run(["git", "init", "-q"], cwd=course_root, check=True)
    generated = ["exercises/9.2-layer-norm/9.2-layer-norm.ipynb", "exercises/9.2-layer-norm/9.2-layer-norm.py",
                 "exercises/9.2-layer-norm/.ipynb_checkpoints/x.ipynb"]
    ignored = subprocess.run(["git", "check-ignore", *generated, "exercises/9.2-layer-norm/exercise.py"],
                             capture_output=True, text=True, cwd=course_root)
    assert ignored.stdout.split() == generated, "generated files are ignored, the exercise is not"
