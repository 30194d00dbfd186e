"""A warm grading process: `python -m kata.grading.zygote FD [--sandboxed] [MODULE ...]`, started by `kata.pool`.

Most of a grading unit's cost is starting Python and `import torch`. A zygote pays it once: it imports
torch, pytest, hypothesis and the grading modules (the judge's, `kata.grading.child` and `plugin`, and the
student process's, `kata.student`), and the torch MODULEs its kata's graders import while loading (a kata's
`warm_imports`: torch._dynamo, about 2 s, for the katas whose graders build an optimiser or a meta-device
triangle), then forks one fresh judge per unit. It never imports a grader, a reference solution or a
student's file, and runs no tensor operation, so each unit starts from the state a cold judge
(`python -m kata.grading.child`) reaches after the same imports, and goes on exactly as a cold judge does:
`kata.grading.child.main` with the same arguments forks the student's process (which builds its own
walls), grades, and the unit exits. A unit is used once. The zygote is undumpable: the student's process
of a unit, which may run as the same user, cannot reach into it and so into the units after it.

Threads: a fork copies only the calling thread, so the zygote starts none. After its imports the only
other thread can be OpenBLAS's (numpy's, sized by OPENBLAS_NUM_THREADS), which OpenBLAS itself stops
before a fork and restarts when next needed (pthread_atfork). torch's intra-op pool starts at the first
parallel tensor operation, so it first starts in the unit, sized by the unit's own OMP_NUM_THREADS.

What Python and the imports draw at random once per process is the zygote's, shared by its units: the
string hash seed, numpy's global generator. No check depends on them (`random` reseeds itself in a
forked child; torch's default generator starts from a fixed seed, and the plugin seeds it per check, here
and in the student's process). Hypothesis registers the generators it manages in the zygote, as a cold
judge does at its start (`child.register_hypothesis_randoms`). Then everything the imports made is frozen
out of the garbage collector's sight (`gc.freeze`): a unit's collections scan only what the unit made, and
its pages stay shared with the zygote.

The protocol, over the socketpair whose end is FD (one JSON object per line, `Channel`):
- the pool sends `{"argv", "env", "cwd", "fds", "log"}` with the unit's descriptors attached
  (`socket.send_fds`): the results pipe, the lifeline, the go pipe if any, and the pipe for its
  stdout/stderr. `argv` is `kata.grading.child`'s, naming the descriptors by the pool's numbers (`fds`,
  in the order they are attached; `log` is the output pipe's);
- the zygote forks and answers `{"pid"}` once the unit leads its own session (as a cold judge started
  with `start_new_session`), so the pool may signal its process group from then on;
- when the unit ends: `{"exit": pid, "status": waitpid's status}`;
- when the pool closes its end, the zygote kills what it still runs and exits.
(A unit keeps its zygote's command line: `ps` shows it as `kata.grading.zygote`, its parent.)

In a sandbox (`--sandboxed`, as `kata grade` starts its zygotes: `kata.pool`), a zygote lives inside
bubblewrap, one per kata, seeing what a cold unit of that kata sees (`isolation.command`): the student's
file appears in its /submission folder only while that student's unit runs. It tries once, in a trial
fork, that a student's process can build its walls there (`kata.student.walls`), and says
`{"ready": true}` (or why not) before its first request. The pool moves the zygote into the unit's memory
cgroup for the fork, so the unit (the judge and the student's process) is charged from its first page.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import re
import select
import signal
import socket
import sys
import time
import traceback

# The arguments of `kata.grading.child` that name a descriptor: the results pipe, `--kata-lifeline-fd=`,
# `--kata-go-fd=`.
_DESCRIPTOR_ARGUMENT = re.compile(r"^(fd:|--kata-[a-z-]+-fd=)(\d+)$")
_MAX_DESCRIPTORS = 8  # a request carries four at most (the log too)
_MAX_LINE = 1024 * 1024  # a message of the pool's is a few kilobytes


class Channel:
    """One JSON object per line over a stream socket, with descriptors riding along."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._buffer = bytearray()
        self._descriptors: list[int] = []

    def send(self, message: dict, fds: list[int] = ()) -> None:
        data = json.dumps(message).encode() + b"\n"
        sent = socket.send_fds(self.sock, [data], list(fds)) if fds else 0
        self.sock.sendall(data[sent:])

    def receive(self, timeout: float | None = None) -> tuple[dict, list[int]] | None:
        """The next message and the descriptors that came with it; None if none came within `timeout`
        (None: wait as long as it takes). EOFError when the other end closed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while (end := self._buffer.find(b"\n")) < 0:
            if deadline is not None:
                remaining = max(0.0, deadline - time.monotonic())
                if not select.select([self.sock], [], [], remaining)[0]:
                    return None
            data, fds, _, _ = socket.recv_fds(self.sock, 65536, _MAX_DESCRIPTORS)
            self._descriptors += fds
            if not data:
                raise EOFError("the other end of the channel closed")
            self._buffer += data
            if len(self._buffer) > _MAX_LINE:
                raise ValueError(f"a message longer than {_MAX_LINE:,} bytes")
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        fds, self._descriptors = self._descriptors, []
        return json.loads(line), fds

    def pending(self) -> bool:
        return b"\n" in self._buffer


def renumber(argv: list[str], numbers: dict[int, int]) -> list[str]:
    """`argv` with each descriptor it names changed from the pool's number to the unit's."""
    def swap(arg: str) -> str:
        match = _DESCRIPTOR_ARGUMENT.match(arg)
        return f"{match.group(1)}{numbers[int(match.group(2))]}" if match else arg

    return [swap(arg) for arg in argv]


def _preload(warm_imports: list[str]) -> None:
    """What every unit needs before the graders or the student's file exist (kata.toolkit's properties are
    left to the graders: `kata.toolkit.properties` reads the run's seed when imported), and the torch
    modules its kata's graders would import while loading (`warm_imports` in course.toml)."""
    import hypothesis  # noqa: F401
    import pytest  # noqa: F401
    import torch  # noqa: F401

    from kata.grading import child, plugin  # noqa: F401  (plugin: imported for the units)
    from kata.student import serve  # noqa: F401  (the student's process, forked by each unit)

    import_warm(warm_imports)
    child.register_hypothesis_randoms()
    # What the imports made lives as long as the process: frozen, the units' garbage collections never scan
    # it (a full collection among torch's objects takes a tenth of a second), and their pages stay shared.
    gc.collect()
    gc.freeze()


def import_warm(warm_imports) -> None:
    """Import a kata's `warm_imports` (torch's own modules only: never a grader's, a solution's, a student's),
    before the judge forks the student's process, so that both have them (a cold judge does this too)."""
    import importlib

    for name in warm_imports:
        if name.split(".")[0] != "torch":
            raise ValueError(f"a zygote imports torch modules only, not {name!r}")
        importlib.import_module(name)


def _open_descriptors() -> set[int]:
    found = set()
    for name in os.listdir("/dev/fd"):  # /proc/self/fd on Linux
        with contextlib.suppress(OSError):
            os.fstat(int(name))
            found.add(int(name))
    return found


def serve(channel: Channel) -> None:
    """Fork a unit for each request until the pool closes the channel."""
    inherited = _open_descriptors()  # stdio and whatever the imports opened, as a cold child has them
    cold_sigchld = signal.getsignal(signal.SIGCHLD)
    # A unit's end wakes the loop through this pipe (no thread: a fork would copy it half-done).
    wakeup_read, wakeup_write = os.pipe()
    os.set_blocking(wakeup_read, False)
    os.set_blocking(wakeup_write, False)
    signal.set_wakeup_fd(wakeup_write, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    own = {wakeup_read, wakeup_write, channel.sock.fileno()}
    running: set[int] = set()
    while True:
        if not channel.pending():
            ready = select.select([channel.sock, wakeup_read], [], [])[0]
            if wakeup_read in ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(wakeup_read, 4096)
                _report_ended(channel, running)
            if channel.sock not in ready:
                continue
        try:
            request, fds = channel.receive()
        except EOFError:
            break
        if len(fds) != len(request["fds"]):
            for fd in fds:
                os.close(fd)
            channel.send({"error": f"{len(fds)} descriptors came with the request, {len(request['fds'])} named"})
            continue
        pid = _fork_unit(request, fds, keep=inherited, close=own, cold_sigchld=cold_sigchld)
        running.add(pid)
        channel.send({"pid": pid})
    for pid in running:  # the pool went away: so do its units
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    for pid in running:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _report_ended(channel: Channel, running: set[int]) -> None:
    while running:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in running:  # not an orphan the zygote reaped as its sandbox's first process
            running.discard(pid)
            channel.send({"exit": pid, "status": status})


def _fork_unit(request: dict, fds: list[int], *, keep: set[int], close: set[int], cold_sigchld) -> int:
    """Fork the unit of `request`; its pid once it leads its own session."""
    in_session_read, in_session_write = os.pipe()
    sys.stdout.flush()  # nothing buffered here may be written twice
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.close(in_session_read)
            os.setsid()
            os.close(in_session_write)
            status = _run_unit(request, fds, keep=keep, close=close, cold_sigchld=cold_sigchld)
        except BaseException:  # what an uncaught exception does to a cold child: its traceback, status 1
            traceback.print_exc()
        finally:
            with contextlib.suppress(BaseException):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(status)  # never back into the zygote's loop
    os.close(in_session_write)
    os.read(in_session_read, 1)  # end of file: the unit has called setsid, or died
    os.close(in_session_read)
    for fd in fds:
        os.close(fd)
    return pid


def _run_unit(request: dict, fds: list[int], *, keep: set[int], close: set[int], cold_sigchld) -> int:
    """In the forked unit: become what a cold judge is at this point, then grade as it does."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, cold_sigchld)  # the one handler the zygote changed
    numbers = dict(zip(request["fds"], fds, strict=True))
    log = numbers[request["log"]]
    os.dup2(log, 1)
    os.dup2(log, 2)
    passed = {numbers[n] for n in request["fds"] if n != request["log"]}
    for fd in (_open_descriptors() - keep - passed) | close:  # the zygote's socket and pipes, the log's copy
        with contextlib.suppress(OSError):
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    from kata.grading import child

    argv = renumber(request["argv"], numbers)
    sys.argv = [child.__file__, *argv]
    return child.main(argv)


def trial() -> str:
    """Why a student's process could not build its walls here ("" if it can): one fork that builds them."""
    from kata.student import walls

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read)
            report = walls.build(hidden=[], keep={write})
            os.write(write, (report.problem or "").encode())
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        problem = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    if status != 0:
        return f"a trial of the student's walls failed (status {os.waitstatus_to_exitcode(status)})"
    return problem


def main() -> None:
    from kata.grading import isolation

    channel = Channel(socket.socket(fileno=int(sys.argv[1])))
    sandboxed = sys.argv[2:3] == ["--sandboxed"]
    _preload(sys.argv[3:] if sandboxed else sys.argv[2:])
    isolation.undumpable()
    if sandboxed:
        try:
            problem = trial()
        except OSError as exc:
            problem = str(exc)
        channel.send({"ready": not problem, "problem": problem})
        if problem:
            return
    serve(channel)


if __name__ == "__main__":
    main()
