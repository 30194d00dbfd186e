"""The grading runner: every way a student's file can go wrong becomes a named outcome.

Each test grades a real file for kata 9.1 through the real child process.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from kata import outcomes, pool, runner
from kata.grading import plugin, protocol
from tests.conftest import CORRECT_SOFTMAX, alive


def grade(course, path, **kwargs):
    return runner.run_kata(course, course.find("9.1"), path, **kwargs)


def assert_no_grader_source(result):
    """Nothing the student is shown comes from the graders' files."""
    shown = json.dumps({k: v for k, v in result.to_dict().items() if k != "log"})
    assert "graders/" not in shown and "test_softmax.py" not in shown
    for snippet in ("def test_", "assert_close(", "mistakes_for(", "import pytest"):
        assert snippet not in shown, snippet


def test_correct_file_passes_every_check(course, softmax_file):
    result = grade(course, softmax_file(CORRECT_SOFTMAX))
    assert result.outcome == runner.PASSED, [c.message for c in result.checks if not c.passed]
    assert result.exit_code == outcomes.EXIT_PASSED
    assert len(result.checks) >= 10 and all(c.passed for c in result.checks)
    assert result.points == pytest.approx(result.max_points) == 10
    assert result.devices == ["cpu"] and result.cuda_verified is False
    assert result.torch and result.cuda_available is False


def test_checks_carry_title_device_dtype_and_weight(course, softmax_file):
    result = grade(course, softmax_file(CORRECT_SOFTMAX))
    by_id = {c.id: c for c in result.checks}
    check = by_id["test_matches_torch_softmax[cpu-float64]"]
    assert check.title == "Equal to torch.softmax for every shape and dim [cpu-float64]"
    assert (check.device, check.dtype, check.weight) == ("cpu", "float64", 1.0)
    assert sum(c.points for c in result.checks) == pytest.approx(10)


def test_cuda_checks_run_after_every_cpu_check():
    """A device-side assert leaves CUDA unusable for the rest of the run: the CPU checks must have run first."""
    def item(name, device=None):
        return SimpleNamespace(name=name, callspec=SimpleNamespace(params={"device": device}) if device else None)

    items = [item("a", "cuda"), item("b", "cpu"), item("c"), item("d", "cuda"), item("e", "cpu")]
    items.sort(key=plugin._on_cuda)
    assert [i.name for i in items] == ["b", "c", "e", "a", "d"]


def test_a_broken_cuda_is_explained_once_then_named_in_the_checks_after(course, softmax_file):
    """CUDA's sticky errors (a device-side assert: mostly an index out of range) are explained where they first
    show; the checks after say they could not run, rather than repeating CUDA's text."""
    # The line and the text would match 9.1's error pattern for a sum without keepdim: a broken CUDA is never
    # diagnosed by the line it surfaced in.
    path = softmax_file("def softmax(x, dim=-1):\n    raise RuntimeError('CUDA error: device-side assert triggered; "
                        "must match the size of tensor') if x.sum(dim) is not None else None\n")
    errors = [c for c in grade(course, path).checks if c.status == protocol.ERROR]
    assert len(errors) > 2 and not any(c.diagnoses for c in errors)
    assert "most often an index out of range" in errors[0].message and "--device cpu" in errors[0].message
    assert all(c.message.startswith("not run: CUDA stopped working in an earlier check") for c in errors[1:])


@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU its own checks run: nothing stands in for them")
def test_the_cpu_stands_in_for_cuda_in_verify_never_in_a_grade(course):
    """`kata verify` (cuda_checks_on_cpu) runs the half-precision checks written for CUDA on the CPU; a student's
    check or a grade never does, so their checks and points are the same on every machine without a GPU."""
    kata = course.find("9.1")
    plain, stand_in = (runner.run_kata(course, kata, kata.solution, cuda_checks_on_cpu=flag) for flag in (False, True))
    half = ["test_half_precision_forward[cpu-float16]", "test_half_precision_forward[cpu-bfloat16]"]
    assert plain.passed and not plain.cuda_checks_on_cpu and not set(half) & {c.id for c in plain.checks}
    assert stand_in.passed and stand_in.cuda_checks_on_cpu and set(half) <= {c.id for c in stand_in.checks}
    assert stand_in.points == plain.points == kata.points


def test_children_share_the_cores_with_the_runs_beside_them(course, monkeypatch):
    """torch's threads per grading child: half the cores for one run, the cores shared among parallel runs."""
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pool, "usable_cpus", lambda: 16)  # the CPUs this process may use (`kata.cpus`)
    assert [runner.grading_env(course, n)["OMP_NUM_THREADS"] for n in (1, 2, 4, 12, 32)] == ["8", "8", "4", "1", "1"]
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the user's own setting wins
    assert runner.grading_env(course, 12)["OMP_NUM_THREADS"] == "3"


def test_stub_is_not_implemented(course):
    result = grade(course, course.find("9.1").exercise)
    assert result.outcome == runner.NOT_IMPLEMENTED
    assert result.exit_code == outcomes.EXIT_FAILED
    assert {c.status for c in result.checks} == {protocol.NOT_IMPLEMENTED}
    assert all(c.frames and c.frames[-1].code == "raise NotImplementedError()" for c in result.checks)


def test_torchs_not_implemented_error_is_an_error_not_the_stub(course, softmax_file):
    """Only a `raise NotImplementedError` of the student's file is "not implemented yet": one torch raises (`&` of a
    float tensor) is an error of the student's code, at the line that called torch; at import too."""
    path = softmax_file("import torch\n\ndef softmax(x, dim=-1):\n    return x.float() & (x > 0)\n")
    result = grade(course, path)
    assert result.outcome == runner.FAILED and protocol.NOT_IMPLEMENTED not in {c.status for c in result.checks}
    errors = [c for c in result.checks if c.status == protocol.ERROR]
    assert errors and all(c.message.startswith("NotImplementedError") and "not implemented for 'Float'" in c.message
                          and c.frames[-1].line == 4 for c in errors)
    at_import = grade(course, softmax_file("import torch\n\ntorch.ones(2) & torch.ones(2)\n"))
    assert at_import.outcome == runner.EXCEPTION and "not implemented for 'Float'" in at_import.message
    own = grade(course, softmax_file("def softmax(x, dim=-1):\n    raise NotImplementedError(\n        'later')\n"))
    assert own.outcome == runner.NOT_IMPLEMENTED



def test_syntax_error_names_file_line_and_code(course, softmax_file):
    path = softmax_file("import torch\n\ndef softmax(x, dim=-1)\n    return x\n")
    result = grade(course, path)
    assert result.outcome == runner.SYNTAX_ERROR and result.exit_code == outcomes.EXIT_FAILED
    assert result.frames[0].file == str(path) and result.frames[0].line == 3
    assert result.frames[0].code == "def softmax(x, dim=-1)"
    assert "SyntaxError" in result.message
    assert result.torch is None and not result.checks, "a syntax error is found without starting the graders"


def test_import_error(course, softmax_file):
    result = grade(course, softmax_file("import torch\nimport tensorflow_that_is_not_here\n"))
    assert result.outcome == runner.IMPORT_ERROR
    assert "No module named 'tensorflow_that_is_not_here'" in result.message
    assert result.frames[-1].line == 2
    assert not result.checks


def test_exception_at_import_shows_only_student_frames(course, softmax_file):
    path = softmax_file("import torch\n\ndef helper():\n    return 1 / 0\n\nhelper()\n")
    result = grade(course, path)
    assert result.outcome == runner.EXCEPTION
    assert result.message == "ZeroDivisionError: division by zero"
    assert [(f.line, f.function) for f in result.frames] == [(6, "<module>"), (4, "helper")]
    assert all(f.file == str(path) for f in result.frames)


def test_exception_in_a_check_is_trimmed_to_the_students_frames(course, softmax_file):
    path = softmax_file("import torch\n\ndef softmax(x, dim=-1):\n    return x @ torch.ones(3, 3, 3)\n")
    result = grade(course, path)
    assert result.outcome == runner.FAILED
    errors = [c for c in result.checks if c.status == protocol.ERROR]
    assert errors
    for check in errors:
        assert check.message.startswith("RuntimeError")
        assert [(f.file, f.line) for f in check.frames] == [(str(path), 4)]
    assert_no_grader_source(result)


def test_wrong_values_fail_with_a_tensor_aware_message(course, softmax_file):
    path = softmax_file("import torch\n\ndef softmax(x, dim=-1):\n    return torch.exp(x) / 2\n")
    result = grade(course, path)
    assert result.outcome == runner.FAILED and 0 < result.points < result.max_points
    message = next(c.message for c in result.checks if c.id == "test_matches_torch_softmax[cpu-float32]")
    assert "output differs from torch.softmax for x of shape (7,), dim=0" in message
    assert "elements differ" in message and "largest absolute error" in message and " at [" in message
    assert_no_grader_source(result)


def test_infinite_loop_times_out_naming_the_check(course, softmax_file):
    path = softmax_file("import torch\n\ndef softmax(x, dim=-1):\n    while True:\n        pass\n")
    result = grade(course, path, timeout=6)
    assert result.outcome == runner.TIMEOUT and result.exit_code == outcomes.EXIT_TIMEOUT
    assert "ran longer than 6 s" in result.message
    assert "during check test_" in result.message
    # Asked where it was when time ran out, the student's process said: the loop's line in softmax.
    assert result.message.endswith("When time ran out, your code was at line 4 (softmax).")
    assert [(f.line, f.function, f.code) for f in result.frames] == [(4, "softmax", "while True:")]
    assert result.seconds < 15


def _stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command's name (state first); [] for a process that ended."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _descendants(pid: int) -> set[int]:
    """Every process below `pid`: its children, theirs, and so on."""
    parents = {int(p): int(fields[1]) for p in os.listdir("/proc") if p.isdigit() and (fields := _stat(int(p)))}
    found, level = set(), {pid}
    while level:
        level = {child for child, parent in parents.items() if parent in level} - found
        found |= level
    return found


def _cpu_seconds(pid: int) -> float:
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") if fields else 0.0


def _in_a_pid_namespace_of_its_own(pid: int) -> bool:
    """Whether the process has a pid in a PID namespace below ours too (its NSpid names two or more)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return len(line.split()) > 2
    return False


def _spinning(pid: int) -> list[int]:
    """The processes below `pid` that run the student's loop: in the student's PID namespace, with more CPU
    time than the student's process spends before it runs a line of the student's code, and still growing."""
    found = []
    for candidate in _descendants(pid):
        if _in_a_pid_namespace_of_its_own(candidate) and (before := _cpu_seconds(candidate)) > 1.0:
            time.sleep(0.5)
            if _cpu_seconds(candidate) > before:
                found.append(candidate)
    return found


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc to find the student's process")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_check_never_outlives_kata(course_root, softmax_file, how):
    """`kata check` killed (or its terminal closed) while the student's code loops forever: the judge and the
    student's process end with it instead of spinning on alone (only kata enforces the time budget)."""
    path = softmax_file("while True:\n    pass\n", name="loops.py")
    # SIGHUP as a terminal's closing sends it: with its default action, even where the tests run under nohup.
    kata = subprocess.Popen([sys.executable, "-m", "kata", "check", "9.1", "--file", str(path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while not _spinning(kata.pid):
            assert time.monotonic() < deadline and kata.poll() is None, "the student's loop never began"
            time.sleep(0.2)
        below = _descendants(kata.pid)  # the judge, the student's process and the namespace's init
        assert len(below) >= 3, below
        kata.send_signal(how)
        kata.wait(10)
        deadline = time.monotonic() + 10
        while left := [pid for pid in below if alive(pid)]:
            assert time.monotonic() < deadline, f"processes of the grading {left} outlived kata"
            time.sleep(0.1)
    finally:
        kata.kill()


def test_os_exit_is_a_crash_not_a_pass(course, softmax_file):
    """The student's process ending in the middle of a call is a crash that names the call, the way it ended,
    and the check it happened in; no check after it runs."""
    path = softmax_file("import os\n\ndef softmax(x, dim=-1):\n    os._exit(0)\n")
    result = grade(course, path)
    assert result.outcome == runner.CRASH and result.exit_code == outcomes.EXIT_CRASH and result.points == 0
    assert result.message == (
        "your code's process ended while calling softmax: it ended with exit code 0: did your code call os._exit() "
        "or sys.exit(), or crash the interpreter? (during check test_matches_torch_softmax[cpu-float32]: "
        "\"Equal to torch.softmax for every shape and dim [cpu-float32]\")")
    assert [(c.id, c.status) for c in result.checks] == [("test_matches_torch_softmax[cpu-float32]", protocol.CRASH)]


def test_killed_by_a_signal_is_a_crash(course, softmax_file):
    path = softmax_file("import os, signal\n\ndef softmax(x, dim=-1):\n    os.kill(os.getpid(), signal.SIGSEGV)\n")
    result = grade(course, path)
    assert result.outcome == runner.CRASH and result.points == 0
    assert result.message.startswith("your code's process ended while calling ")
    assert "it was killed by SIGSEGV" in result.message and "during check test_" in result.message


def test_sys_exit_at_import_is_reported(course, softmax_file):
    result = grade(course, softmax_file("import sys\nsys.exit(0)\n"))
    assert result.outcome == runner.EXCEPTION
    assert result.message.startswith("SystemExit")


def test_megabytes_of_printing_are_captured_and_cut(course, softmax_file):
    body = CORRECT_SOFTMAX.replace("def softmax(x, dim=-1):\n",
                                   "def softmax(x, dim=-1):\n    print('x' * 1_000_000)\n")
    result = grade(course, softmax_file(body))
    assert result.outcome == runner.PASSED
    assert all(len(c.output) < 5000 for c in result.checks), max(len(c.output) for c in result.checks)
    assert all(c.output.startswith("x" * 3000) and c.output.count("more not kept") == 1 for c in result.checks)


def test_forbidden_builtin_is_refused_before_running(course, softmax_file):
    path = softmax_file("import torch.nn.functional as F\n\ndef softmax(x, dim=-1):\n    return F.softmax(x, dim)\n")
    result = grade(course, path)
    assert result.outcome == runner.FORBIDDEN and result.exit_code == outcomes.EXIT_FAILED
    assert "torch.nn.functional.softmax" in result.message
    assert [(f.line, f.code) for f in result.frames] == [(4, "return F.softmax(x, dim)")]
    assert not result.checks


def test_forbidden_builtin_through_an_alias_raises_at_run_time(course, softmax_file):
    # A name the source does not spell (the scan folds "soft" + "max"; it cannot follow a join).
    path = softmax_file("import torch\n\ndef softmax(x, dim=-1):\n"
                        "    return getattr(torch, ''.join(['soft', 'max']))(x, dim)\n")
    result = grade(course, path)
    assert result.outcome == runner.FORBIDDEN
    forbidden = [c for c in result.checks if c.status == protocol.FORBIDDEN]
    assert forbidden and f"{path}:4" in forbidden[0].message


def test_missing_file_is_an_import_error(course, course_root):
    result = grade(course, course_root / "exercises" / "9.1-softmax" / "gone.py")
    assert result.outcome == runner.IMPORT_ERROR and "kata reset 9.1" in result.message


def test_classic_mistake_is_named(course, softmax_file):
    path = softmax_file("import torch\n\ndef softmax(x, dim=-1):\n    e = torch.exp(x)\n"
                        "    return e / e.sum(dim=dim, keepdim=True)\n")
    result = grade(course, path)
    assert result.outcome == runner.FAILED
    assert any(d["id"] == "no-max-subtraction" for c in result.checks for d in c.diagnoses)


def test_bytecode_is_cached_for_the_kata_package_never_in_the_students_folders(course, course_root, softmax_file,
                                                                                  monkeypatch):
    """With Python's default caching on (a student's laptop), the judge caches the kata package's modules,
    and nothing of the exercise, the graders or the reference solution is cached."""
    import kata.grading

    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    cached = Path(kata.grading.__file__).parent / "__pycache__"
    shutil.rmtree(cached, ignore_errors=True)  # written again by the grading child alone
    solution = course_root / "solutions" / "9.1-softmax" / "solution.py"
    for path in (softmax_file(CORRECT_SOFTMAX), solution):
        assert grade(course, path).outcome == runner.PASSED
    assert not list(course_root.rglob("__pycache__"))
    assert list(cached.glob("spawn.*.pyc")) and list(cached.glob("plugin.*.pyc"))


def test_warnings_show_the_students_line_never_the_graders(course, course_root):
    """An unbiased variance on a one-element input makes torch warn, in the student's code and in the
    grader computing what that mistake outputs; a student's warnings.warn(stacklevel=2) points at the line
    that called it, outside the student's file when that is the student's process serving the judge. Only
    the student's lines may show: never a grader's, nor the lines of the kata package that run the student's
    code (the serve loop, the forbidden built-ins' guard)."""
    kata = course.find("9.2")
    path = course_root / "exercises" / kata.dirname / "exercise.py"
    solution = kata.solution.read_text(encoding="utf-8")
    path.write_text(solution + "\n\n" + (kata.mistakes_dir / "unbiased_variance.py").read_text(encoding="utf-8") + (
        "\n\nimport warnings\n_plain = layer_norm\n\n\n"
        "def layer_norm(x, gamma, beta, eps=1e-5):\n"
        "    warnings.warn('mine, pointing at my caller', stacklevel=2)\n"
        "    return _plain(x, gamma, beta, eps)\n"), encoding="utf-8")
    lines = path.read_text(encoding="utf-8").splitlines()
    var_line = next(i for i, line in enumerate(lines, 1) if line.strip() == "var = x.var(dim=-1, keepdim=True)")
    warn_line = next(i for i, line in enumerate(lines, 1) if "warnings.warn('mine" in line)
    result = runner.run_kata(course, kata, path)
    assert result.outcome == runner.FAILED, (result.outcome, result.message)
    shown = result.output + "".join(c.output + c.message for c in result.checks)
    assert "graders" not in shown and "test_layer_norm" not in shown and "mistakes_for" not in shown, shown[:3000]
    assert "kata/student" not in shown and "kata/grading" not in shown, shown[:3000]
    assert f"{path}:{var_line}: UserWarning: var(): degrees of freedom is <= 0" in shown, shown[:3000]
    assert f"{path}:{warn_line}: UserWarning: mine, pointing at my caller" in shown, shown[:3000]


def test_points_never_come_from_part_of_the_checks(course, softmax_file, tmp_path):
    """A check that was skipped leaves the kata without a verdict: the checks that ran passed, but the
    kata is neither passed nor worth points (3 of 3 checks is not the kata)."""
    graders = tmp_path / "graders"
    graders.mkdir()
    (graders / "test_part.py").write_text(
        "import pytest\nimport torch\n\n\n"
        "def test_sums_to_one(student):\n"
        "    assert torch.allclose(student.softmax(torch.randn(3, 4)).sum(-1), torch.ones(3))\n\n\n"
        "def test_not_here():\n"
        "    pytest.skip('this check did not run')\n")
    result = grade(course, softmax_file(CORRECT_SOFTMAX), graders=graders)
    assert [c.status for c in result.checks] == [protocol.PASSED, protocol.SKIPPED]
    assert result.outcome == runner.INCOMPLETE and not result.passed and not result.complete
    assert result.points == 0 and all(c.points == 0 for c in result.checks)
    assert result.exit_code == outcomes.EXIT_FAILED and "1 of 2 checks were skipped" in result.message
    assert runner.not_recorded(course.find("9.1"), result) == "not every CPU check ran"
    full = grade(course, softmax_file(CORRECT_SOFTMAX))
    assert full.passed and full.complete and full.points == full.max_points


VERDICT_ONLY_CHECKS = '''

@pytest.mark.verdict_only
def test_zz_learns(student):
    """A verdict-only check: it passes or fails, naming no mistake"""
    x = torch.randn(4, 6)
    assert_close(student.softmax(x), torch.softmax(x, dim=-1))


@pytest.mark.verdict_only
def test_zz_names_a_mistake(student):
    """A verdict-only check that (wrongly) names a mistake when it fails"""
    if not torch.isfinite(student.softmax(torch.full((3,), 1000.0))).all():
        fail("not finite", NO_MAX)
'''


def test_a_mistake_settles_at_its_first_failed_check_and_only_verdict_only_checks_are_skipped(course, softmax_file):
    """`settle_early` (kata verify's planted mistakes): once a check has failed, the checks marked verdict_only are
    skipped; with no failure before them they run. A verdict-only check may not name a mistake: a grader error."""
    kata = course.find("9.1")
    with (kata.graders / "test_softmax.py").open("a") as grader:
        grader.write(VERDICT_ONLY_CHECKS)
    wrong = softmax_file("import torch\n\n\ndef softmax(x, dim=-1):\n    return torch.exp(x) / torch.exp(x).sum(dim, "
                         "keepdim=True)\n", "no_max.py")
    settled, full = (grade(course, wrong, settle_early=flag) for flag in (True, False))
    by_id = {c.id: c for c in settled.checks}
    assert settled.outcome == runner.FAILED and "no-max-subtraction" in {d["id"] for c in settled.checks
                                                                         for d in c.diagnoses}
    assert by_id["test_zz_learns"].status == by_id["test_zz_names_a_mistake"].status == protocol.SKIPPED
    assert by_id["test_zz_learns"].message.startswith("not run: an earlier check failed")
    unskipped = [c for c in settled.checks if not c.id.startswith("test_zz_")]
    assert [(c.id, c.status) for c in unskipped] == [(c.id, c.status) for c in full.checks
                                                       if not c.id.startswith("test_zz_")]
    # Without settling, both run: the one that names a mistake is the grader's error, its diagnosis dropped.
    named = {c.id: c for c in full.checks}["test_zz_names_a_mistake"]
    assert named.status == protocol.ERROR and named.message.startswith("grader error: this check is marked "
                                                                       "verdict_only, yet it named no-max-subtraction")
    assert not named.diagnoses
    # The reference fails nothing before them: settling skips nothing.
    reference = grade(course, kata.solution, settle_early=True)
    assert reference.passed and {"test_zz_learns", "test_zz_names_a_mistake"} <= {c.id for c in reference.checks}
