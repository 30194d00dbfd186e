"""The warm grading pool (`kata.pool`, `kata.grading.zygote`): a unit forked from a zygote is graded
exactly as a cold child is, whatever the unit does, and the pool leaves no process behind.

Real processes throughout: real zygotes, real forks, real graders, each result compared with the
same file graded cold in the same test.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kata import runner
from kata.course import load_course
from kata.grading import cgroup, isolation
from kata.pool import Pool
from kata.verify import with_mistake
from tests.conftest import CORRECT_SOFTMAX, children_of, copy_course, wait_until

TIMEOUT = 180  # generous for a loaded machine, except where the timeout is the point


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A copy of the course, located through the environment, for the whole module (its pool too)."""
    root = copy_course(tmp_path_factory.mktemp("pool") / "course")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KATA_COURSE", str(root))
        patch.setenv("KATA_PROGRESS", str(root / ".kata-progress.json"))
        patch.chdir(root)
        yield load_course(root)


@pytest.fixture(scope="module")
def pool(course):
    with Pool(course, 1) as pool:
        yield pool


def _warm_sandbox_or_skip() -> None:
    """`kata grade`'s pool needs bubblewrap and a memory cgroup per unit: CI runs as root, with both."""
    if not isolation.probe().available:
        pytest.skip(isolation.probe().problem)
    if not cgroup.probe().available:
        pytest.skip(cgroup.probe().problem)


@pytest.fixture(scope="module")
def sandboxed_pool(course):
    _warm_sandbox_or_skip()
    with Pool(course, 1, sandboxed=True) as pool:
        yield pool


def pool_of_kind(request, kind: str):
    """A pool with how its units are graded cold: plain (`kata verify`), or sandboxed (`kata grade`, each
    unit in its own bubblewrap sandbox when cold)."""
    if kind == "plain":
        return request.getfixturevalue("pool"), {}
    return request.getfixturevalue("sandboxed_pool"), {"isolate": True}


@pytest.fixture(params=["plain", "sandboxed"])
def any_pool(request):
    """Each pool in turn (`pool_of_kind`)."""
    return pool_of_kind(request, request.param)


@pytest.fixture
def student_file(tmp_path):
    def write(body: str, name: str = "exercise.py"):
        path = tmp_path / name
        path.write_text(body, encoding="utf-8")
        return path

    return write


def summary(result: runner.KataResult) -> dict:
    """Everything a result says about the student's file (not how long it took, nor the child's log)."""
    frames = lambda fs: [(f.file, f.line, f.function, f.code) for f in fs]  # noqa: E731
    return {
        "outcome": result.outcome, "message": result.message, "points": result.points, "output": result.output,
        "frames": frames(result.frames), "complete": result.complete, "threads": result.threads,
        "memory_mb": result.memory_mb, "known_diagnoses": result.known_diagnoses,
        "checks": [(c.id, c.status, c.message, sorted(d["id"] for d in c.diagnoses), frames(c.frames), c.output)
                   for c in result.checks],
    }


def both_ways(course, pool, kata_id: str, path, **kwargs) -> tuple[dict, dict]:
    """The file graded cold and through the pool, at the same time (neither's result depends on the other)."""
    kata = course.find(kata_id)
    kwargs.setdefault("timeout", TIMEOUT)
    with ThreadPoolExecutor(2) as threads:
        cold = threads.submit(runner.run_kata, course, kata, path, **kwargs)
        pooled = threads.submit(runner.run_kata, course, kata, path, pool=pool, **kwargs)
        return summary(cold.result()), summary(pooled.result())


def assert_pool_grades_correctly(course, pool, student_file, **how):
    result = runner.run_kata(course, course.find("9.1"), student_file(CORRECT_SOFTMAX, "correct.py"), pool=pool,
                             timeout=TIMEOUT, **how)
    assert result.outcome == runner.PASSED, (result.message, result.log[-1500:])


# ------------------------------------------------------------------------------------ same results


# Each kata once, each kind of pool at least once (9.5: its zygotes import its warm_imports, as 9.7's do, at a
# fraction of 9.7's grading time; the sandboxed pool is the one that grades for credit).
@pytest.mark.parametrize(("kind", "kata_id"), [("sandboxed", "9.1"), ("plain", "9.4"), ("sandboxed", "9.5")])
def test_pooled_grading_gives_what_cold_grading_gives(request, course, student_file, kind, kata_id):
    pool, how = pool_of_kind(request, kind)
    kata = course.find(kata_id)
    solution = kata.solution.read_text(encoding="utf-8")
    files = {"reference": kata.solution, "stub": kata.exercise}
    for mistake in kata.mistakes()[:1]:
        files[mistake.stem] = student_file(with_mistake(solution, mistake.read_text(encoding="utf-8"), mistake.name),
                                           f"mistake_{mistake.stem}.py")
    outcomes = {}
    for name, path in files.items():
        cold, pooled = both_ways(course, pool, kata_id, path, **how)
        assert pooled == cold, name
        outcomes[name] = cold["outcome"]
    assert outcomes["reference"] == runner.PASSED and outcomes["stub"] == runner.NOT_IMPLEMENTED
    assert all(outcomes[m.stem] == runner.FAILED for m in kata.mistakes()[:1])


def test_a_unit_sees_the_environment_folder_and_arguments_of_a_cold_child(course, any_pool, student_file):
    pool, how = any_pool
    body = ("import os, re, signal, sys, threading, torch\n"
            "print(os.getcwd(), sys.path[0], sys.flags, torch.get_num_threads(), threading.active_count())\n"
            "print(sorted(os.environ.items()))\n"
            "print([re.sub(r'\\d+$', 'N', a) for a in sys.argv[1:]])  # descriptor numbers differ\n"
            "handlers = {s: signal.getsignal(s) for s in signal.valid_signals() if isinstance(s, signal.Signals)}\n"
            "print({s.name: getattr(h, '__qualname__', str(h)) for s, h in handlers.items()})\n"
            "print(os.getpid(), os.getppid(), os.getpgid(0), os.getsid(0))\n"
            + CORRECT_SOFTMAX)
    cold, pooled = both_ways(course, pool, "9.1", student_file(body), **how)
    # The student's process is PID 2 of a namespace of its own, under its init: the judge, which leads the process
    # group and the session, is out of its view.
    assert cold["outcome"] == runner.PASSED and "\n2 1 0 0\n" in cold["output"], cold["message"]
    assert pooled["output"] == cold["output"]


# ------------------------------------------------------------------- a unit cannot harm the next one

WRONG = "    return torch.exp(x) / 2\n"
HARMFUL = {
    "rewrites its process": ("import torch\nimport kata.grading.plugin as plugin\n"
                             "plugin._classify = lambda report, call: ('passed', '', (), [])\n"
                             "torch.allclose = lambda *a, **k: True\n\n"
                             "def softmax(x, dim=-1):\n" + WRONG, {}),
    "kills its parent": ("import os, signal, torch\n\ndef softmax(x, dim=-1):\n"
                         "    os.kill(os.getppid(), signal.SIGKILL)\n" + WRONG, {}),
    "kills its process group": ("import os, signal, torch\n\ndef softmax(x, dim=-1):\n"
                                "    os.killpg(0, signal.SIGKILL)\n" + WRONG, {}),
    "calls os._exit": ("import os\n\ndef softmax(x, dim=-1):\n    os._exit(0)\n", {}),
    "crashes": ("import os, signal\n\ndef softmax(x, dim=-1):\n    os.kill(os.getpid(), signal.SIGSEGV)\n", {}),
    "runs out of memory": (CORRECT_SOFTMAX.replace(
        "def softmax(x, dim=-1):\n",
        "def softmax(x, dim=-1):\n    waste = torch.empty(3 * 1024 ** 3, dtype=torch.uint8)\n"), {"memory_mb": 2048}),
    "loops forever": ("import torch\n\ndef softmax(x, dim=-1):\n    while True:\n        pass\n", {"timeout": 4}),
}
EXPECTED = {"rewrites its process": runner.FAILED, "kills its parent": runner.FAILED,
            "kills its process group": runner.CRASH, "calls os._exit": runner.CRASH, "crashes": runner.CRASH,
            "runs out of memory": runner.MEMORY, "loops forever": runner.TIMEOUT}


@pytest.mark.parametrize("case", list(HARMFUL))
def test_a_harmful_unit_is_reported_as_cold_and_leaves_the_pool_sound(request, course, student_file, case):
    """On the sandboxed pool, the one that grades for credit (the plain one shares its code)."""
    if case == "runs out of memory" and not sys.platform.startswith("linux"):
        pytest.skip("RLIMIT_DATA is enforced on Linux")
    pool, how = pool_of_kind(request, "sandboxed")
    body, kwargs = HARMFUL[case]
    assert_pool_grades_correctly(course, pool, student_file, **how)  # the zygote of 9.1's kind is up
    zygotes = pool.pids()
    cold, pooled = both_ways(course, pool, "9.1", student_file(body), **kwargs, **how)
    assert cold["outcome"] == EXPECTED[case], cold["message"]
    assert pooled == cold
    assert pool.pids() == zygotes  # the zygote itself was not touched
    assert_pool_grades_correctly(course, pool, student_file, **how)


# ---------------------------------------------------------------------------------- the zygotes


def test_a_zygote_that_died_is_replaced(course, student_file):
    with Pool(course, 1) as pool:
        [first] = pool.pids()
        os.kill(first, signal.SIGKILL)
        assert_pool_grades_correctly(course, pool, student_file)
        [second] = pool.pids()
        assert second != first and first not in zygote_pids()


def test_a_zygote_that_dies_under_its_unit_takes_the_unit_and_is_replaced(course, student_file):
    hanging = student_file("import torch\nwhile True:\n    pass\n", "hangs.py")  # at import: the unit never ends
    with Pool(course, 1) as pool:
        [zygote] = pool.pids()
        run = runner._Run(course, course.find("9.1"), hanging, budget=TIMEOUT, devices="cpu", seed=0, memory_mb=None,
                          graders=None, pool=pool)
        os.kill(zygote, signal.SIGKILL)
        result = run.finish(TIMEOUT, started=0.0)
        assert result.outcome == runner.CRASH and "killed by SIGKILL" in result.message
        assert gone(run.child.pid)  # orphaned by its zygote, the killed unit is reaped by init: not at once
        assert_pool_grades_correctly(course, pool, student_file)
        assert zygote not in pool.pids()


def test_a_unit_whose_zygote_died_as_it_forked_is_started_again_with_new_pipes(course, student_file, monkeypatch):
    """The zygote may die after it forked a unit and before its answer reached the pool: that unit runs on, holding
    the request's pipes. It must not share them with the unit started in its place (both would write to one
    results pipe, which reads as tampering): the runner starts again with new pipes and a new key, and the lost
    unit, its pipes closed at our end, ends."""
    from kata.grading.zygote import Channel

    real_receive, lost = Channel.receive, []

    def answer_lost(self, timeout=None):
        if not lost:  # the first answer, the new unit's pid: it is forked, then its zygote dies unheard
            [zygote] = pool.pids()
            lost.extend(wait_until(lambda: children_of(zygote), "the unit, forked by its zygote"))
            os.kill(zygote, signal.SIGKILL)
            raise EOFError("the zygote died")
        return real_receive(self, timeout)

    monkeypatch.setattr(Channel, "receive", answer_lost)
    with Pool(course, 1) as pool:
        result = runner.run_kata(course, course.find("9.1"), student_file(CORRECT_SOFTMAX), pool=pool, timeout=TIMEOUT)
        assert result.outcome == runner.PASSED, (result.outcome, result.message)
        [unit] = lost
        assert gone(unit), "the lost unit outlived its pipes"


def test_no_zygote_or_unit_is_left_once_the_pool_closes(course, student_file):
    pool = Pool(course, 2)
    zygotes = pool.pids()
    assert_pool_grades_correctly(course, pool, student_file)
    hanging = student_file("import torch\nwhile True:\n    pass\n", "hangs.py")  # at import: the unit never ends
    run = runner._Run(course, course.find("9.1"), hanging, budget=TIMEOUT, devices="cpu", seed=0, memory_mb=None,
                      graders=None, pool=pool)
    unit = run.child.pid
    assert in_group(unit) and set(zygotes) <= zygote_pids()
    pool.close()
    run.close()
    assert run.child.returncode == -signal.SIGKILL
    assert not set(zygotes) & zygote_pids()
    assert gone(unit)  # the unit, its student's process and the init of that one's namespace: reaped, not at once


def zygote_pids() -> set[int]:
    found = subprocess.run(["pgrep", "-f", "kata.grading.zygote"], capture_output=True, text=True).stdout
    return {int(pid) for pid in found.split()}


def gone(pgid: int, within: float = 10) -> bool:
    """Whether the process group `pgid` is empty within `within` seconds."""
    deadline = time.monotonic() + within
    while in_group(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def in_group(pgid: int) -> bool:
    """Whether any process (a unit, or one it started) is left in the process group `pgid`."""
    return subprocess.run(["pgrep", "-g", str(pgid)], capture_output=True).returncode == 0


# ------------------------------------------------------------- the walls of a unit in a warm sandbox

WALLS = """import json, os, subprocess, sys
from kata.grading import isolation
from kata.student import walls

isolation.undumpable()  # as the zygote does


def unit(probe):
    # A unit's student's process: forked, it builds its walls (and returns in PID 2 of a namespace of its own).
    pid = os.fork()
    if pid == 0:
        try:
            report = walls.build(hidden=[GRADERS], keep=set())
            assert report.namespaces, report
            probe()
        finally:
            sys.stdout.flush()
            os._exit(0)
    os.waitpid(pid, 0)


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def first():
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    found = {"pid": os.getpid(), "capabilities": status["CapEff"].strip(), "no_new_privs": status["NoNewPrivs"].strip(),
             "others": [p for p in range(3, 400) if alive(p)], "graders": os.listdir(GRADERS)}
    for name in ("mem", "environ"):  # the zygote is PID 1 of the sandbox whose /proc this is
        try:
            open(f"/proc/1/{name}", "rb").read(1)
            found[name] = "read"
        except OSError as exc:
            found[name] = type(exc).__name__
    for path in ("/tmp/left", "/dev/shm/left", "/dev/left", "/left", COURSE_TOML):
        try:
            with open(path, "w") as f:
                f.write("x")
            found[path] = "written"
        except OSError as exc:
            found[path] = type(exc).__name__
    subprocess.Popen(["sleep", "977"], start_new_session=True)  # would outlive the unit
    print(json.dumps(found))


def second():
    print(json.dumps({"tmp": sorted(os.listdir("/tmp")), "shm": sorted(os.listdir("/dev/shm"))}))


print(json.dumps({"graders": os.listdir(GRADERS)}))  # the zygote's own view
sys.stdout.flush()
unit(first)
unit(second)
"""


def test_a_warm_unit_is_walled_off_from_its_zygote_and_from_the_next_unit(course, tmp_path):
    """The walls themselves (`kata.student.walls`), built by a unit's student's process in a zygote's sandbox, with
    nothing else in the way: what the student's native code would meet."""
    _warm_sandbox_or_skip()
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "walls.py").write_text(WALLS.replace("COURSE_TOML", repr(str(course.root / "course.toml")))
                                         .replace("GRADERS", repr(str(course.find("9.1").graders))))
    placeholder = tmp_path / "placeholder"
    placeholder.touch()
    info_read, info_write = os.pipe()
    command = isolation.command(course, course.find("9.1"), submission, placeholder=placeholder,
                                warm_info_fd=info_write)
    try:
        done = subprocess.run([*command, sys.executable, "/submission/walls.py"], capture_output=True, text=True,
                              timeout=120, env=isolation.environment(dict(os.environ)), pass_fds=(info_write,))
    finally:
        os.close(info_write)
        os.close(info_read)
    assert done.returncode == 0, done.stderr[-3000:]
    zygote, first, second = (json.loads(line) for line in done.stdout.splitlines())
    # Its own PID namespace (PID 2 under its own init, nothing else in view), no capability, no new ones.
    assert first["pid"] == 2 and first["others"] == []
    assert first["capabilities"] == "0000000000000000" and first["no_new_privs"] == "1"
    # The zygote's memory and environment are closed to it.
    assert first["mem"] == first["environ"] == "PermissionError"
    # The graders the zygote's sandbox holds are hidden from it.
    assert "test_softmax.py" in zygote["graders"] and first["graders"] == []
    # Its own /tmp and /dev/shm; everything else read-only.
    assert first["/tmp/left"] == first["/dev/shm/left"] == "written"
    assert first["/dev/left"] == first["/left"] == first[str(course.root / "course.toml")] == "OSError"
    # The next unit finds nothing of it, and its process did not outlive it.
    assert "left" not in second["tmp"] and second["shm"] == []
    assert subprocess.run(["pgrep", "-f", "sleep 977"], capture_output=True).returncode == 1


def _without_capabilities() -> None:
    """(preexec_fn) A process of this test's user with no capability (as root: none in its bounding set, so that
    the program it runs has none), as a student's process without namespaces of its own may be."""
    if os.geteuid() == 0:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        for capability in range(int(Path("/proc/sys/kernel/cap_last_cap").read_text()) + 1):
            libc.prctl(24, capability, 0, 0, 0)  # PR_CAPBSET_DROP


def _opens_memory_of(pid: int) -> bool:
    """Whether a process of the same user as `pid`, with no capability, can open its memory."""
    return subprocess.run(["/bin/sh", "-c", f"exec 3< /proc/{pid}/mem"], preexec_fn=_without_capabilities,
                          capture_output=True).returncode == 0


def test_a_zygote_is_undumpable(course):
    """A student's process without namespaces of its own may run as the zygote's user, with no capability (a
    laptop without user namespaces): once its imports are done, a zygote is undumpable, so that such a process,
    which can open the memory of another process of that user, cannot open the zygote's (nor so reach the units
    it forks). (Here the zygote and the other process have no capability either, as they would there.)"""
    ours, theirs = socket.socketpair()
    zygote = subprocess.Popen([sys.executable, "-m", "kata.grading.zygote", str(theirs.fileno())],
                              pass_fds=(theirs.fileno(),), preexec_fn=_without_capabilities, cwd="/",
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    plain = subprocess.Popen(["sleep", "600"], preexec_fn=_without_capabilities)
    theirs.close()
    try:
        assert _opens_memory_of(plain.pid), "a process of the same user can be read: the control"
        # Its imports take seconds: until then it is a plain process of its user.
        wait_until(lambda: not _opens_memory_of(zygote.pid) or zygote.poll() is not None, "the zygote undumpable",
                   timeout=180)
        assert zygote.poll() is None, zygote.stderr.read().decode()[-3000:]
        assert not _opens_memory_of(zygote.pid) and _opens_memory_of(plain.pid)
    finally:
        plain.kill()
        ours.close()  # the pool's end: the zygote exits
        try:
            zygote.wait(30)
        finally:
            zygote.kill()
    assert zygote.returncode == 0, zygote.stderr.read().decode()[-3000:]


def test_where_no_zygote_can_start_in_its_sandbox_units_are_graded_cold(course, student_file, monkeypatch):
    _warm_sandbox_or_skip()
    sandbox = isolation.command

    def failing_for_zygotes(*args, warm_info_fd=None, **kwargs):  # as where bwrap refuses the zygote's options
        return ["/bin/false", "--"] if warm_info_fd is not None else sandbox(*args, **kwargs)

    monkeypatch.setattr(isolation, "command", failing_for_zygotes)
    with Pool(course, 1, sandboxed=True) as pool:
        for _ in range(2):
            assert_pool_grades_correctly(course, pool, student_file, isolate=True)
        assert "the sandboxed grading zygote did not start" in pool.broken
        assert pool.pids() == []


def zygote_command(pid: int, within: float = 30) -> list[bytes]:
    """The command line of the zygote `pid`, once it runs (right after its start, the process may not have
    started the zygote's program yet)."""
    deadline = time.monotonic() + within
    while b"kata.grading.zygote" not in (command := Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")):
        assert time.monotonic() < deadline, f"process {pid} never became a zygote: {command}"
        time.sleep(0.05)
    return command


def test_a_pool_starts_the_kind_of_zygote_its_first_units_want(course):
    """`kata verify` queues the capstone first: its pool's first zygotes import what the capstone's graders do,
    rather than starting plain ones to replace them at once."""
    with Pool(course, 2, warm_imports=("torch._dynamo",)) as pool:
        commands = [zygote_command(pid) for pid in pool.pids()]
    assert len(commands) == 2 and all(b"torch._dynamo" in command for command in commands)
    with Pool(course, 1) as pool:
        [plain] = [zygote_command(pid) for pid in pool.pids()]
    assert b"torch._dynamo" not in plain


LAZY_NUMPY_TESTING = '''import numpy as np
import torch


def softmax(x, dim=-1):
    np.testing.assert_array_equal(x.detach().cpu().numpy(), x.detach().cpu().numpy())  # imported on first use
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)
'''


@pytest.mark.parametrize("pooled", [False, True], ids=["cold", "pooled"])
def test_a_library_that_reads_package_metadata_is_not_a_look_at_the_graders(course, student_file, pooled):
    """numpy.testing, imported on first use inside the student's function, reads numpy's metadata, which lists every
    folder on sys.path, the graders' among them: the plugin has them listed before the student's code runs, so
    this is a library at work, not tampering, whether the unit starts cold or from a zygote."""
    path = student_file(LAZY_NUMPY_TESTING, "lazy_numpy_testing.py")
    with Pool(course, 1) if pooled else contextlib.nullcontext() as pool:
        result = runner.run_kata(course, course.find("9.1"), path, pool=pool)
    assert result.passed and result.points == result.max_points, (result.outcome, result.message)
