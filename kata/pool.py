"""A warm grading pool: zygote processes that fork one grading child per unit.

A cold unit starts Python and imports torch, pytest and hypothesis: about 1.5 s of a 2 s unit. A pooled
unit is forked from a zygote (`kata.grading.zygote`) that made those imports once, then set up and run
exactly as a cold child is, with the same arguments, descriptors, environment and working folder, and
discarded after one unit. `kata.runner` drives it through `Unit`, which stands in for the
`subprocess.Popen` of a cold child (pid, poll, wait, returncode): the time budget, the stack sample, the
killing of its process group and the reading of its results are the runner's, as for a cold child.

A kata whose graders import more of torch while loading (its `warm_imports` in course.toml: torch._dynamo,
about 2 s a unit) gets zygotes of its own that imported it too; the others keep plain ones, whose units
seal fewer modules.

`kata verify` grades through one pool of `--jobs` zygotes of each kind; `KATA_POOL=0` turns it off (every unit
then starts cold, as everywhere else: `kata check`, `kata watch`, and `kata grade`, whose units run in
a sandbox that a pool does not enter yet).
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from kata.course import Course
from kata.grading.zygote import Channel

POOL_VARIABLE = "KATA_POOL"  # "0": no pool
CLOSE_WAIT_S = 5  # a zygote still importing notices the pool's close only when done


class PoolError(Exception):
    """The pool could not start a unit (its zygote died, twice)."""


class Unit:
    """A grading child forked by a zygote, seen as the runner sees a `subprocess.Popen`."""

    def __init__(self, zygote: _Zygote, pid: int, on_end: Callable[[Unit], None]):
        self.pid = pid
        self.returncode: int | None = None
        self._zygote, self._on_end = zygote, on_end

    def poll(self) -> int | None:
        if self.returncode is None:
            self._collect(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None and not self._collect(timeout):
            raise subprocess.TimeoutExpired(f"grading unit {self.pid}", timeout)
        return self.returncode

    def _collect(self, timeout: float | None) -> bool:
        """Read the zygote's word that the unit ended; False if none came within `timeout`."""
        try:
            answer = self._zygote.channel.receive(timeout)
        except (EOFError, OSError, ValueError):  # ValueError: the pool closed the socket meanwhile
            # The zygote died (or the pool closed) under its unit, and the unit's status with it: the unit goes too.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            self._zygote.dead = True
            self._ended(-signal.SIGKILL)
            return True
        if answer is None:
            return False
        message, _ = answer
        self._ended(os.waitstatus_to_exitcode(message["status"]))
        return True

    def _ended(self, returncode: int) -> None:
        self.returncode = returncode
        self._on_end(self)


class _Zygote:
    """One zygote process and our end of its socket; it runs one unit at a time. `warm_imports`: the torch
    modules it imported for its katas' graders (a kata's `warm_imports`)."""

    def __init__(self, course: Course, env: dict[str, str], warm_imports: tuple[str, ...] = ()):
        self.warm_imports = warm_imports
        ours, theirs = socket.socketpair()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "kata.grading.zygote", str(theirs.fileno()), *warm_imports],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env, cwd=course.root,
                start_new_session=True, pass_fds=(theirs.fileno(),))
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.channel = Channel(ours)
        self.dead = False

    def usable(self) -> bool:
        return not self.dead and self.process.poll() is None

    def fork(self, argv: list[str], *, env: dict[str, str], cwd: Path, fds: list[int], log: int) -> int:
        """Ask for a unit; its pid. EOFError or OSError if the zygote is gone."""
        passed = [*fds, log]
        self.channel.send({"argv": argv, "env": env, "cwd": str(cwd), "fds": passed, "log": log}, passed)
        message, _ = self.channel.receive()
        if "error" in message:
            raise PoolError(f"the grading zygote refused the unit: {message['error']}")
        return message["pid"]

    def close(self) -> None:
        """Close our end: the zygote kills what it still runs and exits."""
        self.channel.sock.close()
        try:
            self.process.wait(CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Pool:
    """Up to `size` zygotes of one course per set of `warm_imports` (the plain ones started at once, the
    others when a unit first needs them); `spawn` forks a unit from an idle one of its kind (waiting for
    one if `size` are busy) and replaces a zygote that died."""

    def __init__(self, course: Course, size: int):
        from kata.runner import grading_env  # the runner uses this module: imported when needed

        self.course, self.env, self.size = course, grading_env(course), max(1, size)
        self._idle: dict[tuple[str, ...], queue.SimpleQueue[_Zygote]] = {(): queue.SimpleQueue()}
        self._lock = threading.Lock()
        self._zygotes: list[_Zygote] = []  # every zygote started, for `close`
        self._units: set[Unit] = set()  # units not known to have ended
        for _ in range(self.size):
            self._idle[()].put(self._start(()))

    def _start(self, warm_imports: tuple[str, ...]) -> _Zygote:
        zygote = _Zygote(self.course, self.env, warm_imports)
        with self._lock:
            self._zygotes.append(zygote)
        return zygote

    def _take(self, warm_imports: tuple[str, ...]) -> _Zygote:
        """An idle zygote of this kind: a new one while fewer than `size` of its kind were started."""
        with self._lock:
            idle = self._idle.setdefault(warm_imports, queue.SimpleQueue())
            new = idle.empty() and sum(z.warm_imports == warm_imports for z in self._zygotes) < self.size
            if new:  # started under the lock, so that two threads never both add the last one
                zygote = _Zygote(self.course, self.env, warm_imports)
                self._zygotes.append(zygote)
        return zygote if new else idle.get()

    def spawn(self, argv: list[str], *, env: dict[str, str], fds: list[int], log: int,
              warm_imports: tuple[str, ...] = ()) -> Unit:
        """A unit running `kata.grading.child` with `argv` and `env` in the course's folder, holding `fds`
        (named in `argv` by these numbers) and writing its stdout and stderr to `log`, forked from a zygote
        that imported `warm_imports` (its kata's)."""
        zygote = self._take(warm_imports)
        try:
            for _ in range(2):  # a zygote may die between units (killed, say): one fresh try
                if not zygote.usable():
                    zygote = self._replace(zygote)
                try:
                    pid = zygote.fork(argv, env=env, cwd=self.course.root, fds=fds, log=log)
                except (EOFError, OSError):
                    zygote.dead = True
                    continue
                unit = Unit(zygote, pid, self._ended)
                with self._lock:
                    self._units.add(unit)
                return unit
            raise PoolError("the grading zygote died before it could start the unit, and so did its replacement")
        except BaseException:
            self._idle[zygote.warm_imports].put(zygote)
            raise

    def _replace(self, zygote: _Zygote) -> _Zygote:
        with self._lock:
            if zygote in self._zygotes:
                self._zygotes.remove(zygote)
        with contextlib.suppress(OSError):
            zygote.process.kill()
        zygote.close()
        return self._start(zygote.warm_imports)

    def _ended(self, unit: Unit) -> None:
        with self._lock:
            self._units.discard(unit)
        self._idle[unit._zygote.warm_imports].put(unit._zygote)

    def pids(self) -> list[int]:
        """The zygotes' process ids (for tests and benchmarks)."""
        with self._lock:
            return [z.process.pid for z in self._zygotes]

    def close(self) -> None:
        """End every zygote and every unit still running."""
        with self._lock:
            units, zygotes = list(self._units), list(self._zygotes)
            self._units.clear()
            self._zygotes.clear()
        for unit in units:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(unit.pid, signal.SIGKILL)
        for zygote in zygotes:
            zygote.close()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def enabled() -> bool:
    """Whether grading may use a pool here: `KATA_POOL` is not "0", and the system can fork."""
    return os.environ.get(POOL_VARIABLE, "1") != "0" and hasattr(os, "fork") and hasattr(socket, "send_fds")


@contextlib.contextmanager
def open_pool(course: Course, size: int) -> Iterator[Pool | None]:
    """A pool of `size` zygotes for the block, closed after it; None where `enabled()` says no."""
    if not enabled():
        yield None
        return
    with Pool(course, size) as pool:
        yield pool
