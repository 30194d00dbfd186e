"""Isolation of graded code: the in-process guard's refusals of processes, sockets and shared memory.

The guard (`kata.grading.sandbox`) is the first wall, and the only one of `kata check` on a student's
laptop. Every entry point of the standard library that starts a process must be refused while the
student's code runs: the cases below are found by name in the live modules, so a new one (a new Python)
makes `test_every_process_entry_point_has_a_case` fail until it has a case here.
"""

from __future__ import annotations

import json
import os
import re
import sys

import pytest

from kata import runner
from tests.conftest import CORRECT_SOFTMAX

TIMEOUT = 180
WRONG = "    return torch.exp(x) / 2\n"

# Modules whose process-starting entry points are enumerated, and what starts a process in them.
PROCESS_MODULES = ("os", "subprocess", "_posixsubprocess", "pty", "multiprocessing", "multiprocessing.util",
                   "concurrent.futures", "asyncio")
PROCESS_NAME = re.compile(r"fork|exec|spawn|system|popen|subprocess|^(run|call|check_call|check_output|getoutput"
                          r"|getstatusoutput)$|^Process$|Pool$|PoolExecutor$", re.IGNORECASE)
# Names the pattern finds that start no process.
NOT_STARTING = {"os.register_at_fork", "os.get_exec_path", "subprocess.CalledProcessError",
                "subprocess.SubprocessError", "asyncio.SubprocessProtocol", "asyncio.SubprocessTransport",
                "asyncio.run", "multiprocessing.ProcessError",
                "multiprocessing.set_executable", "multiprocessing.set_forkserver_preload",
                "multiprocessing.util.ForkAwareLocal", "multiprocessing.util.ForkAwareThreadLock",
                "multiprocessing.util.register_after_fork", "concurrent.futures.Executor",
                "concurrent.futures.ThreadPoolExecutor", "concurrent.futures.BrokenExecutor"}

# One call per entry point; a process that starts touches MARKS/<name>. `M` is the marks folder.
PROCESS_CASES = {
    "os.system": "os.system(f'touch {M}/os.system')",
    "os.popen": "os.popen(f'touch {M}/os.popen').read()",
    "os.fork": "fork_child(os.fork(), 'os.fork')",
    "os.forkpty": "fork_child(os.forkpty()[0], 'os.forkpty')",
    "os.execl": "os.execl(TOUCH, TOUCH, f'{M}/os.execl')",
    "os.execle": "os.execle(TOUCH, TOUCH, f'{M}/os.execle', {})",
    "os.execlp": "os.execlp('touch', 'touch', f'{M}/os.execlp')",
    "os.execlpe": "os.execlpe('touch', 'touch', f'{M}/os.execlpe', dict(os.environ))",
    "os.execv": "os.execv(TOUCH, [TOUCH, f'{M}/os.execv'])",
    "os.execve": "os.execve(TOUCH, [TOUCH, f'{M}/os.execve'], {})",
    "os.execvp": "os.execvp('touch', ['touch', f'{M}/os.execvp'])",
    "os.execvpe": "os.execvpe('touch', ['touch', f'{M}/os.execvpe'], dict(os.environ))",
    "os.spawnl": "os.spawnl(os.P_WAIT, TOUCH, TOUCH, f'{M}/os.spawnl')",
    "os.spawnle": "os.spawnle(os.P_WAIT, TOUCH, TOUCH, f'{M}/os.spawnle', {})",
    "os.spawnlp": "os.spawnlp(os.P_WAIT, 'touch', 'touch', f'{M}/os.spawnlp')",
    "os.spawnlpe": "os.spawnlpe(os.P_WAIT, 'touch', 'touch', f'{M}/os.spawnlpe', dict(os.environ))",
    "os.spawnv": "os.spawnv(os.P_WAIT, TOUCH, [TOUCH, f'{M}/os.spawnv'])",
    "os.spawnve": "os.spawnve(os.P_WAIT, TOUCH, [TOUCH, f'{M}/os.spawnve'], {})",
    "os.spawnvp": "os.spawnvp(os.P_WAIT, 'touch', ['touch', f'{M}/os.spawnvp'])",
    "os.spawnvpe": "os.spawnvpe(os.P_WAIT, 'touch', ['touch', f'{M}/os.spawnvpe'], dict(os.environ))",
    "os.posix_spawn": "os.posix_spawn(TOUCH, [TOUCH, f'{M}/os.posix_spawn'], {})",
    "os.posix_spawnp": "os.posix_spawnp('touch', ['touch', f'{M}/os.posix_spawnp'], dict(os.environ))",
    "subprocess.Popen": "subprocess.Popen([TOUCH, f'{M}/subprocess.Popen']).wait()",
    "subprocess.run": "subprocess.run([TOUCH, f'{M}/subprocess.run'])",
    "subprocess.call": "subprocess.call([TOUCH, f'{M}/subprocess.call'])",
    "subprocess.check_call": "subprocess.check_call([TOUCH, f'{M}/subprocess.check_call'])",
    "subprocess.check_output": "subprocess.check_output([TOUCH, f'{M}/subprocess.check_output'])",
    "subprocess.getoutput": "subprocess.getoutput(f'touch {M}/subprocess.getoutput')",
    "subprocess.getstatusoutput": "subprocess.getstatusoutput(f'touch {M}/subprocess.getstatusoutput')",
    # The escape of the audit: no audit event of its own (the arguments of Python 3.11's signature).
    "_posixsubprocess.fork_exec": "fork_exec_touch('_posixsubprocess.fork_exec')",
    "subprocess._fork_exec": "fork_exec_touch('subprocess._fork_exec', subprocess._fork_exec)",
    "multiprocessing.util.spawnv_passfds":
        "multiprocessing.util.spawnv_passfds(TOUCH, [TOUCH, f'{M}/multiprocessing.util.spawnv_passfds'], ())",
    "pty.fork": "fork_child(pty.fork()[0], 'pty.fork')",
    "pty.spawn": "pty.spawn([TOUCH, f'{M}/pty.spawn'])",
    "multiprocessing.Process": "multiprocessing.Process(target=os.system, args=(f'touch {M}/mp',)).start()",
    "multiprocessing.Pool": "multiprocessing.Pool(1)",
    "concurrent.futures.ProcessPoolExecutor":
        "concurrent.futures.ProcessPoolExecutor(1).submit(os.system, f'touch {M}/cf').result()",
    "asyncio.create_subprocess_exec":
        "asyncio.run(asyncio.create_subprocess_exec(TOUCH, f'{M}/asyncio.create_subprocess_exec'))",
    "asyncio.create_subprocess_shell":
        "asyncio.run(asyncio.create_subprocess_shell(f'touch {M}/asyncio.create_subprocess_shell'))",
}

PROCESS_PRELUDE = '''import asyncio, concurrent.futures, json, multiprocessing, multiprocessing.util, os, pty, shutil
import subprocess, sys, torch
import _posixsubprocess

M = {marks!r}
TOUCH = shutil.which("touch")


def fork_child(pid, name):
    if pid == 0:
        open(f"{{M}}/{{name}}", "w").close()
        os._exit(0)


def fork_exec_touch(name, fork_exec=None):
    fork_exec = fork_exec or _posixsubprocess.fork_exec
    return fork_exec([TOUCH.encode(), f"{{M}}/{{name}}".encode()], [TOUCH.encode()], True, (), None, None,
                     -1, -1, -1, -1, -1, -1, *os.pipe(), False, False, -1, None, None, None, -1, None, False)


outcomes = {{}}
'''


def process_entry_points() -> set[str]:
    import importlib

    found = set()
    for name in PROCESS_MODULES:
        module = importlib.import_module(name)
        for attr in dir(module):
            value = getattr(module, attr)
            if PROCESS_NAME.search(attr) and callable(value) and not attr.startswith("__"):
                found.add(f"{name}.{attr}")
    return {f for f in found if f not in NOT_STARTING and not f.startswith(tuple(f"{m}._" for m in PROCESS_MODULES))}


def test_every_process_entry_point_has_a_case():
    missing = process_entry_points() - set(PROCESS_CASES)
    assert not missing, f"process entry points of the standard library without a case here: {sorted(missing)}"


@pytest.mark.skipif(sys.platform != "linux", reason="the process entry points enumerated are Linux's")
def test_no_process_entry_point_starts_a_process(course, softmax_file, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    lines = [PROCESS_PRELUDE.format(marks=str(marks))]
    for name, call in PROCESS_CASES.items():
        lines.append(f"try:\n    {call}\n    outcomes[{name!r}] = 'started'\n"
                     f"except BaseException as exc:\n    outcomes[{name!r}] = type(exc).__name__\n")
    lines.append(f"open({str(tmp_path / 'outcomes.json')!r}, 'w').write(json.dumps(outcomes))\n")
    lines.append(CORRECT_SOFTMAX.split("\n\n", 1)[1])
    result = runner.run_kata(course, course.find("9.1"), softmax_file("\n".join(lines)), timeout=TIMEOUT)
    assert sorted(p.name for p in marks.iterdir()) == []
    outcomes = json.loads((tmp_path / "outcomes.json").read_text())
    assert set(outcomes) == set(PROCESS_CASES)
    refused = {name: how for name, how in outcomes.items() if how != "PermissionError"}
    assert not refused, refused
    # The unaudited entry point is an escape attempt: the run does not count.
    assert result.outcome == runner.TAMPERED and "fork_exec" in result.message, (result.outcome, result.message)


HELPER_ESCAPE = """import json, os, tempfile, torch, _posixsubprocess, sys

HELPER = (b"import json, sys, torch; p = sys.argv[1]; x = torch.tensor(json.load(open(p)), dtype=torch.float64); "
          b"json.dump(torch.nn.functional.softmax(x, -1).tolist(), open(p, 'w'))")


def softmax(x, dim=-1):
    path = tempfile.mktemp()
    with open(path, "w") as f:
        json.dump(x.movedim(dim, -1).tolist(), f)
    args = [sys.executable.encode(), b"-c", HELPER, path.encode()]
    pid = _posixsubprocess.fork_exec(args, [args[0]], True, (), None, None, -1, -1, -1, -1, -1, -1,
                                     *os.pipe(), False, True, -1, None, None, None, -1, None, False)
    os.waitpid(pid, 0)
    with open(path) as f:
        return torch.tensor(json.load(f), dtype=x.dtype, device=x.device).movedim(-1, dim)
"""


def test_a_helper_process_computing_the_forbidden_builtin_is_tampering(course, softmax_file):
    # The audit's escape: a helper started by _posixsubprocess.fork_exec (in its own session) computes
    # F.softmax for the student.
    result = runner.run_kata(course, course.find("9.1"), softmax_file(HELPER_ESCAPE), timeout=TIMEOUT)
    assert result.outcome == runner.TAMPERED and result.points == 0, (result.outcome, result.message)
    assert "fork_exec" in result.message


@pytest.mark.parametrize("attempt, word", [
    ("import socket\nsocket.socket().connect(('127.0.0.1', 9))", "socket"),
    ("import socket\nsocket.create_connection(('localhost', 9), timeout=1)", "socket"),
    ("import mmap\nmmap.mmap(-1, 1 << 20)", "mmap"),
    ("open('/dev/shm/kata-isolation-test', 'wb').write(b'x' * 1024)", "/dev/shm"),
    ("import _posixshmem\n_posixshmem.shm_open('/kata-isolation-test', os.O_CREAT | os.O_RDWR, 0o600)",
     "shared memory"),
])
def test_sockets_and_shared_memory_are_refused(course, softmax_file, attempt, word):
    body = "import os, torch\n\n\ndef softmax(x, dim=-1):\n" + "".join(
        f"    {line}\n" for line in attempt.splitlines()) + WRONG
    result = runner.run_kata(course, course.find("9.1"), softmax_file(body), timeout=TIMEOUT)
    assert result.outcome != runner.PASSED and result.points == 0
    shown = result.message + "".join(c.message for c in result.checks)
    assert word in shown and ("not allowed" in shown or "not available" in shown), shown[:2000]
    assert not os.path.exists("/dev/shm/kata-isolation-test")


def test_a_correct_file_passes_with_sockets_and_processes_refused(course, softmax_file):
    result = runner.run_kata(course, course.find("9.1"), softmax_file(CORRECT_SOFTMAX), timeout=TIMEOUT)
    assert result.outcome == runner.PASSED, (result.outcome, result.message)
