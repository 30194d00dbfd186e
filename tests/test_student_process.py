"""The student's process: what the student's code may try there, and what comes of it (`kata.student`).

The student's code runs in a process of its own, behind walls it builds before a line of that code runs
(`kata.student.walls`), and only answers what the judge asks; verdicts are decided in the judge, where no
student code runs. So the student's code can answer wrongly, crash, or run out of time or memory, and each
is named; it cannot make a check pass. Each test grades a real file for kata 9.1 through the real runner,
judge and student's process. Files that try something return `torch.exp(x) / 2`, which is not a softmax.
(A class of forgers who rewrite their whole process is graded on every path in tests/test_forgers.py.)
"""

from __future__ import annotations

import json

import pytest

from kata import outcomes, runner
from kata.grading import protocol
from tests.conftest import CORRECT_SOFTMAX

TIMEOUT = 180  # these tests are about what the student's code does, not time: generous for a loaded machine
WRONG = "    return torch.exp(x) / 2\n"


def grade(course, path, **kwargs):
    kwargs.setdefault("timeout", TIMEOUT)
    return runner.run_kata(course, course.find("9.1"), path, **kwargs)


def walled(result) -> None:
    """The student's process of `result` stood in namespaces of its own (graders hidden, files read-only)."""
    assert result.walls.get("namespaces"), f"no namespaces for the student's process here: {result.walls}"


def line_of(path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# ----------------------------------------------------------------------- forbidden built-ins (advice)

# Each a name the source does not spell: the scan cannot follow a join, the guard in the student's process
# sees the call (honest mistakes of a student who found another way to reach the built-in).
RUNTIME_ALIASES = {
    "C-level function": "getattr(torch._C._VariableFunctions, NAME)(x, dim)",
    "C-level method": "getattr(torch._C.TensorBase, NAME)(x, dim)",
    "aten operator": "getattr(torch.ops.aten, '_' + NAME).default(x, dim, False)",
    "_VF": "getattr(torch._VF, NAME)(x, dim)",
    "module dict": "torch.nn.functional.__dict__[NAME](x, dim)",
    "module attribute": "getattr(torch, NAME)(x, dim)",
}

# One check per alias: check N calls softmax on an input of N + 1 rows, and the student's softmax takes
# the alias of that number (one grading for all of them).
ALIAS_GRADERS = '''import pytest
import torch


@pytest.mark.parametrize("alias", range({count}))
def test_alias(student, alias):
    student.softmax(torch.randn(alias + 1, 3), dim=-1)
'''


def test_forbidden_builtin_through_a_runtime_alias_is_caught_naming_the_line(course, softmax_file, tmp_path):
    """Each alias is caught as the student's code calls it, and the check names its line: the guard in the
    student's process is advice (that process could undo it), and this is what it is for."""
    graders = tmp_path / "alias-graders"
    graders.mkdir()
    (graders / "test_alias.py").write_text(ALIAS_GRADERS.format(count=len(RUNTIME_ALIASES)))
    branches = "".join(f"    if x.shape[0] == {n + 1}:\n        return {call}  # {name}\n"
                       for n, (name, call) in enumerate(RUNTIME_ALIASES.items()))
    path = softmax_file("import torch\nimport torch.nn.functional\n\nNAME = ''.join(['soft', 'max'])\n\n\n"
                        "def softmax(x, dim=-1):\n" + branches + WRONG)
    result = grade(course, path, graders=graders)
    assert result.outcome == runner.FORBIDDEN, (result.outcome, result.message)
    by_id = {c.id: c for c in result.checks}
    for n, name in enumerate(RUNTIME_ALIASES):
        check = by_id[f"test_alias[{n}]"]
        assert check.status == protocol.FORBIDDEN, (name, check.status, check.message)
        assert "softmax" in check.message and f"{path}:{line_of(path, f'# {name}')}" in check.message, (
            name, check.message)


STATIC_ALIASES = {
    "C-level function": "torch._C._VariableFunctions.softmax(x, dim)",
    "aten operator": "torch.ops.aten._softmax.default(x, dim, False)",
    "_VF": "torch._VF.softmax(x, dim)",
    "special": "torch.special.softmax(x, dim)",
    "glued name": "getattr(torch, 'soft' + 'max')(x, dim)",
    "f-string": "getattr(torch, f\"{'soft'}max\")(x, dim)",
}


@pytest.mark.parametrize("call", STATIC_ALIASES.values(), ids=STATIC_ALIASES.keys())
def test_forbidden_builtin_through_a_static_alias_is_refused_before_running(course, softmax_file, call):
    """The trusted check: the source is read before anything runs."""
    path = softmax_file(f"import torch\n\ndef softmax(x, dim=-1):\n    return {call}\n")
    result = grade(course, path)
    assert result.outcome == runner.FORBIDDEN and not result.checks
    assert "softmax" in result.message and result.frames[0].line == 4
    assert result.torch is None, "read from the source: no grading process started"


# ------------------------------------------------------------------------- the reference, the graders


@pytest.mark.parametrize("unlock", ["", "import os\nos.environ['KATA_CURRENT'] = '9.2'\n"],
                         ids=["plain", "KATA_CURRENT changed"])
def test_the_kata_own_reference_is_not_given_through_kata_earlier(course, softmax_file, unlock):
    """`kata.earlier` gives the student's process the katas before this one only, sent as text by the judge:
    nothing the student's code sets in its process changes which."""
    path = softmax_file(unlock + "from kata.earlier.softmax import softmax\n")
    result = grade(course, path)
    assert result.outcome == runner.IMPORT_ERROR and not result.checks, (result.outcome, result.message)
    assert result.message == ("ImportError: kata 9.1 cannot import kata.earlier.softmax: only the katas before it "
                              "are given")
    assert result.frames[-1].code == "from kata.earlier.softmax import softmax"


def test_the_reference_and_the_graders_are_hidden_from_the_students_process(course_outside_tmp):
    """The course is there for the student's process (read-only), but not its graders and reference solutions:
    read by path they are not found, their folders are empty (an empty folder is mounted over each), whatever
    process reads them, and no other process's root in /proc shows them either; no module of theirs is loaded
    in the process (the judge loads them after it forks the student's process)."""
    root = course_outside_tmp.root
    solution = root / "solutions" / "9.1-softmax" / "solution.py"
    grader = root / "graders" / "9.1-softmax" / "test_softmax.py"
    path = root / "exercises" / "9.1-softmax" / "exercise.py"
    path.write_text(
        "import gc, importlib.util, os, subprocess, sys, types, torch\n\n\n"
        "def attempt(label, action):\n"
        "    try:\n        print(label, repr(action()))\n"
        "    except OSError as exc:\n        print(label, type(exc).__name__)\n\n\n"
        f"attempt('course.toml:', lambda: os.path.isfile({str(root / 'course.toml')!r}))\n"
        f"attempt('solution:', lambda: open({str(solution)!r}).read())\n"
        f"attempt('grader:', lambda: open({str(grader)!r}).read())\n\n\n"
        "def load():\n"
        f"    spec = importlib.util.spec_from_file_location('mine', {str(solution)!r})\n"
        "    spec.loader.exec_module(importlib.util.module_from_spec(spec))\n\n\n"
        "attempt('import:', load)\n"
        "attempt('modules:', lambda: [m for m in sys.modules if m.startswith(('kata_reference', 'test_softmax'))])\n"
        "attempt('objects:', lambda: len([o for o in gc.get_objects() if type(o) is types.ModuleType and any("
        "part in str(vars(o).get('__file__')) for part in ('solutions', 'graders'))]))\n"
        f"attempt('graders:', lambda: os.listdir({str(root / 'graders')!r}))\n"
        f"attempt('solutions:', lambda: os.listdir({str(root / 'solutions')!r}))\n"
        f"attempt('cat:', lambda: subprocess.run(['cat', {str(grader)!r}], capture_output=True).returncode)\n"
        f"attempt('through /proc:', lambda: [p for p in os.listdir('/proc') if p.isdigit() and os.path.exists("
        f"f'/proc/{{p}}/root{solution}')])\n\n\n"
        "def softmax(x, dim=-1):\n" + WRONG)
    result = grade(course_outside_tmp, path)
    walled(result)
    assert result.outcome == runner.FAILED and result.points < result.max_points, (result.outcome, result.message)
    assert result.output.splitlines() == ["course.toml: True", "solution: FileNotFoundError",
                                          "grader: FileNotFoundError", "import: FileNotFoundError", "modules: []",
                                          "objects: 0", "graders: []", "solutions: []", "cat: 1",
                                          "through /proc: []"]
    assert solution.read_text() and grader.read_text()  # there all along, for the judge


# ---------------------------------------------------------------------------------- exits and kills


def test_sys_exit_in_a_check_is_an_error_not_a_pass(course, softmax_file):
    path = softmax_file("import sys, torch\n\ndef softmax(x, dim=-1):\n    sys.exit(0)\n")
    result = grade(course, path)
    assert result.outcome == runner.FAILED and result.points == 0
    assert {c.status for c in result.checks} == {protocol.ERROR}
    assert all(c.message.startswith("SystemExit: 0") and c.frames[-1].line == 4 for c in result.checks)


def test_os_exit_at_import_is_a_crash(course, softmax_file):
    result = grade(course, softmax_file("import os\nos._exit(0)\n"))
    assert result.outcome == runner.CRASH and result.exit_code == outcomes.EXIT_CRASH and not result.checks
    assert result.message == ("your code's process ended while importing your file: it ended with exit code 0: "
                              "did your code call os._exit() or sys.exit(), or crash the interpreter?")


KILLS = {
    "its parent": "os.kill(os.getppid(), signal.SIGKILL)",
    "every process it may": "os.kill(-1, signal.SIGKILL)",
    "its process group": "os.killpg(0, signal.SIGKILL)",
}


@pytest.mark.parametrize("kill", KILLS.values(), ids=KILLS.keys())
def test_killing_the_judge_cannot_pass(course, softmax_file, kill):
    """The student's process signals what is above it: at most its own run ends (a crash), and a wrong answer
    never turns into a pass."""
    path = softmax_file(f"import os, signal, torch\n\ndef softmax(x, dim=-1):\n    {kill}\n" + WRONG)
    result = grade(course, path)
    assert result.outcome in (runner.FAILED, runner.CRASH), (result.outcome, result.message)
    assert not result.passed and result.points < result.max_points
    assert not any(c.passed and c.id.startswith("test_matches_torch_softmax") for c in result.checks)


STOPS = {
    "KeyboardInterrupt": "raise KeyboardInterrupt",
    "pytest.exit": "import pytest; pytest.exit('done', returncode=0)",
}


@pytest.mark.parametrize("stop", STOPS.values(), ids=STOPS.keys())
def test_stopping_the_run_from_the_students_code_fails_the_checks_left(course, softmax_file, stop):
    """A correct softmax that, after 40 calls, raises what would stop a test session: the checks before pass,
    each later one fails naming what was raised, and every check runs (a run that stopped short of the
    checks it announced would be a crash)."""
    body = CORRECT_SOFTMAX.replace("def softmax(x, dim=-1):\n",
                                   "CALLS = [0]\n\ndef softmax(x, dim=-1):\n    CALLS[0] += 1\n"
                                   f"    if CALLS[0] > 40:\n        {stop}\n")
    result = grade(course, softmax_file(body))
    assert result.outcome == runner.FAILED and result.complete, (result.outcome, result.message)
    assert 0 < result.points < result.max_points
    statuses = [c.status for c in result.checks]
    assert statuses[0] == protocol.PASSED and protocol.ERROR in statuses
    assert set(statuses) == {protocol.PASSED, protocol.ERROR}
    name = stop.split()[-1] if stop.startswith("raise") else "Exit"
    assert all(c.message.startswith(name) for c in result.checks if c.status == protocol.ERROR), name


SKIPS = {
    "pytest.skip": "import pytest; pytest.skip('not this one')",
    "hypothesis.assume": "from hypothesis import assume; assume(False)",
    "UnsatisfiedAssumption": "from hypothesis.errors import UnsatisfiedAssumption; raise UnsatisfiedAssumption()",
}


@pytest.mark.parametrize("skip", SKIPS.values(), ids=SKIPS.keys())
def test_what_skips_a_check_or_an_example_skips_nothing_when_the_students_code_raises_it(course, softmax_file, skip):
    """A softmax right on 1-D inputs that raises, on the others, what makes pytest skip a check or hypothesis drop
    an example: raised in the student's process it is the student's failure (or the end of that process), so
    no check is skipped and none passes on the inputs the softmax would fail."""
    body = CORRECT_SOFTMAX.replace("def softmax(x, dim=-1):\n",
                                   f"def softmax(x, dim=-1):\n    if x.dim() > 1:\n        {skip}\n")
    result = grade(course, softmax_file(body))
    assert result.outcome in (runner.FAILED, runner.CRASH), (result.outcome, result.message)
    assert result.checks and protocol.SKIPPED not in {c.status for c in result.checks}
    assert result.points == 0 and not any(c.passed for c in result.checks)


def test_a_stack_the_students_process_sends_unasked_is_dropped(course, softmax_file):
    """The stack signal's handler lives in the student's process: signalled by the student's own code in the
    middle of every call, it sends a stack nobody asked for before the call's answer, which the judge drops."""
    path = softmax_file(CORRECT_SOFTMAX + '''

import os
import signal

_correct = softmax


def softmax(x, dim=-1):
    os.kill(os.getpid(), signal.SIGUSR1)
    return _correct(x, dim)
''')
    result = grade(course, path)
    assert result.outcome == runner.PASSED and result.points == result.max_points, (
        result.message, [c.message for c in result.checks if not c.passed][:2])


# ------------------------------------------------------------------------------------- the progress file


def test_the_students_code_cannot_write_the_progress_file(course_outside_tmp):
    """`kata check`: a pass forged into the progress file from the student's code fails (the student's process
    sees the file system read-only), and the progress file says what the checks said."""
    from click.testing import CliRunner

    from kata.cli import main

    progress = course_outside_tmp.root / ".kata-progress.json"
    forged = json.dumps({"schema": 1, "katas": {"9.1": {"status": "passed"}}})
    (course_outside_tmp.root / "exercises" / "9.1-softmax" / "exercise.py").write_text(
        "import torch\n"
        "for mode in ('w', 'a'):\n"
        "    try:\n"
        f"        with open({str(progress)!r}, mode) as f:\n"
        f"            f.write({forged!r})\n"
        "    except OSError as exc:\n"
        "        print('progress file:', exc.strerror)\n\n"
        "def softmax(x, dim=-1):\n" + WRONG)
    progress.write_text(json.dumps({"schema": 1, "katas": {}}))  # there to be opened, as after any command
    done = CliRunner().invoke(main, ["check", "9.1", "--json"])
    result = json.loads(done.output)
    assert done.exit_code == outcomes.EXIT_FAILED and result["outcome"] == runner.FAILED, done.output[-2000:]
    assert result["output"] == "progress file: Read-only file system\n" * 2
    assert result["recorded"] is True
    entry = json.loads(progress.read_text())["katas"]["9.1"]
    assert entry["status"] == "failing" and entry["attempts"] == 1 and not entry.get("passed_hash")


def test_a_pass_written_by_hand_is_flagged(course, course_root):
    """`kata verify --progress`: a pass must carry the hash of the file that passed."""
    from click.testing import CliRunner

    from kata.cli import main

    progress = course_root / ".kata-progress.json"
    progress.write_text(json.dumps({"schema": 1, "katas": {
        "9.1": {"status": "passed", "attempts": 1, "passed_hash": None},
        "9.2": {"status": "passed", "attempts": 1, "passed_hash": "0" * 64},
    }}), encoding="utf-8")
    result = CliRunner().invoke(main, ["verify", "--progress", "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    by_kata = {k["kata"]: k for k in report["katas"]}
    assert by_kata["9.1"]["verdict"] == "no-proof" and by_kata["9.2"]["verdict"] == "changed"
    assert not report["ok"]


# ---------------------------------------------------------------------------------------- the results


def record(seq: int, event: str = "check") -> bytes:
    return json.dumps({"event": event, "seq": seq}).encode() + b"\n"


def test_the_results_are_read_in_sequence_and_a_cut_last_line_is_dropped():
    """Only the judge writes the results; the parent still reads them strictly: a record missing, repeated or
    out of order, a line that is not JSON or not a record, is a broken stream (an internal error, never a
    verdict); the last line a killed judge leaves half-written is dropped."""
    good = record(0, "session") + record(1) + record(2, "end")
    stream = protocol.read_lines(good)
    assert [e["event"] for e in stream.events] == ["session", "check", "end"] and stream.problems == []
    cut = protocol.read_lines(good + b'{"event": "check", "se')
    assert len(cut.events) == 3 and cut.problems == []
    for broken in (record(0) + record(2), record(0) + record(0), record(1), b"not json\n", b"[1, 2]\n",
                   b'{"seq": 0}\n'):
        assert protocol.read_lines(broken).problems, broken
    reader = protocol.Reader()
    assert reader.feed(record(0).strip()) == {"event": "check", "seq": 0}
    assert reader.feed(record(5).strip()) is None
    assert reader.stream.problems == ["the results are out of sequence (record 5 where 1 was due)"]


# ------------------------------------------------------------------------------------------ honest code


def test_a_correct_file_with_helpers_passes(course, softmax_file):
    """Named tuples, dataclasses, lambdas, helpers and printing are all fine."""
    path = softmax_file("import torch\nfrom collections import namedtuple\nfrom dataclasses import dataclass\n\n"
                        "Pair = namedtuple('Pair', 'a b')\n\n\n"
                        "@dataclass\nclass Options:\n    keepdim: bool = True\n\n\n"
                        "def _shifted(x, dim):\n    return x - x.amax(dim=dim, keepdim=Options().keepdim)\n\n\n"
                        "def softmax(x, dim=-1):\n    e = torch.exp(_shifted(x, dim))\n"
                        "    total = (lambda t: t.sum(dim=dim, keepdim=True))(e)\n"
                        "    print(Pair(1, 2))\n    return e / total\n")
    result = grade(course, path)
    assert result.outcome == runner.PASSED and result.points == result.max_points, [
        (c.title, c.message) for c in result.checks if not c.passed]
    assert all(c.output == "Pair(a=1, b=2)\n" * c.output.count("Pair") for c in result.checks)
    assert any(c.output for c in result.checks)
