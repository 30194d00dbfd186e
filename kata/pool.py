"""A warm grading pool: zygote processes that fork one judge per unit.

A cold unit starts Python and imports torch, pytest and hypothesis: about 1.5 s of a 2 s unit. A pooled
unit is forked from a zygote (`kata.grading.zygote`) that made those imports once, then set up and run
exactly as a cold judge is, with the same arguments, descriptors, environment and working folder, and
discarded after one unit (the judge forks its student's process as a cold one does). `kata.runner` drives
it through `Unit`, which stands in for the `subprocess.Popen` of a cold judge (pid, poll, wait,
returncode): the time budget's backstop, the killing of its process group and the reading of its results
are the runner's, as for a cold judge.

A kata whose graders import more of torch while loading (its `warm_imports` in course.toml: torch._dynamo,
about 2 s a unit) gets zygotes that imported it too; the others get plain ones. A pool holds at most
`size` zygotes: one of another kind, idle, makes room for a new one.

`kata verify` grades through one pool of `--jobs` zygotes, `kata watch` through one of a single zygote for
its session. `kata grade` through a sandboxed pool (`Pool(sandboxed=True)`): each zygote lives in the
bubblewrap sandbox of one kata (`isolation.command`), at most `--jobs` of them at a time (an idle one of
another kata makes room), and each unit is born in its own memory cgroup: the pool moves the zygote into
the unit's cgroup for the fork. That needs a memory cgroup per unit; where there is none, or with
`KATA_POOL=0`, every unit starts cold, as in `kata check`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from kata.course import Course, Kata
from kata.cpus import usable_cpus
from kata.grading import cgroup, isolation
from kata.grading.zygote import Channel

POOL_VARIABLE = "KATA_POOL"  # "0": no pool
Kind = tuple[Kata | None, tuple[str, ...]]  # what a zygote is for: the kata of its sandbox (if any), its warm_imports
CLOSE_WAIT_S = 5  # a zygote still importing notices the pool's close only when done
READY_WAIT_S = 300  # a sandboxed zygote's imports and trial unit, on a loaded machine


class PoolError(Exception):
    """The pool could not start a unit: its zygote died, twice, or a sandboxed zygote cannot start here."""


class UnitLost(PoolError):
    """The zygote died after it was sent a unit's request and before it answered: it may have forked the unit,
    which then holds the descriptors the request carried. The caller starts again with new ones (`kata.runner`
    does): the lost unit's pipes are then closed at our end, so it ends (its lifeline) and writes to no one."""


class Unit:
    """A grading child forked by a zygote, seen as the runner sees a `subprocess.Popen`."""

    def __init__(self, zygote: _Zygote, pid: int, on_end: Callable[[Unit], None]):
        self.pid = pid
        self.returncode: int | None = None
        self.orphaned = False  # it went with its zygote: its returncode is the pool's SIGKILL, not its own
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
            self.orphaned = True
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
    """One zygote process and our end of its socket; it runs one unit at a time. It imported `warm_imports`
    (its katas' extra torch modules). With a `kata`, it lives in that kata's sandbox, and the student's file
    of each unit is put in its `inbox` (its /submission)."""

    def __init__(self, course: Course, env: dict[str, str], kata: Kata | None = None,
                 warm_imports: tuple[str, ...] = ()):
        self.kata, self.warm_imports, self.dead = kata, warm_imports, False
        ours, theirs = socket.socketpair()
        command = [sys.executable, "-m", "kata.grading.zygote", str(theirs.fileno())]
        passed, info_write = [theirs.fileno()], None
        if kata is not None:
            self._folder = tempfile.TemporaryDirectory(prefix="kata-zygote-")
            self.inbox = Path(self._folder.name) / "submission"
            info_read, info_write = os.pipe()
            passed.append(info_write)
            command = [*_warm_sandbox(course, kata, Path(self._folder.name), info_write), *command, "--sandboxed"]
            env = isolation.environment(env)
        command += warm_imports
        try:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env,
                                            cwd=course.root, start_new_session=True, pass_fds=passed)
        except BaseException:
            ours.close()
            if kata is not None:
                os.close(info_read)
                self._folder.cleanup()
            raise
        finally:
            theirs.close()
            if info_write is not None:
                os.close(info_write)
        self.channel = Channel(ours)
        if kata is not None:
            try:
                self.host_pid = self._sandbox_ready(info_read)
            except BaseException:
                self.close()
                raise

    def _sandbox_ready(self, info_read: int) -> int:
        """The zygote's pid as this process sees it (bwrap's info), once the zygote says it is ready."""
        with os.fdopen(info_read, "rb") as info:
            text = info.read()  # bwrap closes it once the sandbox is made
        try:
            pid = json.loads(text)["child-pid"]
            answer = self.channel.receive(READY_WAIT_S)
        except (ValueError, KeyError, EOFError) as exc:
            raise PoolError(f"the sandboxed grading zygote did not start: {exc}") from None
        if answer is None or not answer[0].get("ready"):
            problem = answer[0].get("problem") if answer else f"not ready within {READY_WAIT_S} s"
            raise PoolError(f"the sandboxed grading zygote cannot grade: {problem}")
        return pid

    @property
    def kind(self) -> Kind:
        return self.kata, self.warm_imports

    def usable(self) -> bool:
        return not self.dead and self.process.poll() is None

    def fork(self, argv: list[str], *, env: dict[str, str], cwd: Path, fds: list[int], log: int,
             submission: Path | None = None, group: cgroup.UnitGroup | None = None) -> int:
        """Ask for a unit; its pid. OSError if the zygote was gone before the request reached it, `UnitLost` if it
        died after (it may have forked the unit: the same descriptors must not go to another). A sandboxed zygote gets
        `submission` in its inbox first, and is in the unit's cgroup `group` for the fork."""
        if submission is not None:
            (self.inbox / submission.name).write_bytes(submission.read_bytes())
            env = {**env, "PWD": str(cwd)}  # what bwrap's --chdir sets for a cold unit
        passed = [*fds, log]
        if group is not None:
            group.adopt(self.host_pid)
        try:
            # Not sent whole (the zygote was gone): it started nothing, and the request may go to another zygote.
            self.channel.send({"argv": argv, "env": env, "cwd": str(cwd), "fds": passed, "log": log}, passed)
            try:
                message, _ = self.channel.receive()
            except (EOFError, OSError) as exc:
                raise UnitLost("the grading zygote died as it started the unit") from exc
        except BaseException:  # no answer read (a Ctrl-C, say): a late one would put the channel out of step
            self.dead = True
            with contextlib.suppress(OSError):
                self.process.kill()
            raise
        finally:
            if group is not None:
                group.release(self.host_pid)
        if "error" in message:
            raise PoolError(f"the grading zygote refused the unit: {message['error']}")
        if group is None:
            return message["pid"]
        pid = group.member(message["pid"])  # the pid in the sandbox, seen from here
        if pid is None:
            raise PoolError("the sandboxed unit ended before it could be found in its cgroup")
        return pid

    def empty_inbox(self) -> None:
        if self.kata is not None:
            for path in self.inbox.iterdir():
                path.unlink()

    def close(self) -> None:
        """Close our end: the zygote kills what it still runs and exits."""
        self.channel.sock.close()
        try:
            self.process.wait(CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.kata is not None:
            self._folder.cleanup()


class Pool:
    """At most `size` zygotes of one course; `spawn` forks a unit from an idle one (waiting for one if all
    are busy) and replaces a zygote that died. Unsandboxed, `size` zygotes start at once, of the kind the
    first units will want (`warm_imports`: plain by default); any other (sandboxed, or of other
    `warm_imports`) starts when a unit first needs it."""

    def __init__(self, course: Course, size: int, *, sandboxed: bool = False, warm_imports: tuple[str, ...] = ()):
        self.course, self.env, self.sandboxed = course, grading_env(course, size), sandboxed
        self.size = max(1, size)
        self._changed = threading.Condition()
        self._idle: list[_Zygote] = []  # the least recently used first
        self._zygotes: list[_Zygote] = []  # every zygote started and not closed, for `close`
        self._starting = 0  # zygotes being started: they count against `size` already
        self._units: set[Unit] = set()  # units not known to have ended
        self.broken: str | None = None  # why its zygotes cannot start here, once one could not
        if not sandboxed:
            for _ in range(self.size):
                self._idle.append(self._start((None, tuple(warm_imports))))

    def _start(self, kind: Kind, *, reserved: bool = False) -> _Zygote:
        """A new zygote; `reserved`: the caller counted it in `_starting` already."""
        kata, warm_imports = kind
        with self._changed:
            self._starting += not reserved
        try:
            zygote = _Zygote(self.course, self.env, kata, warm_imports)
        except PoolError as exc:  # a sandboxed zygote that cannot grade here: no use trying again
            self.broken = str(exc)
            raise
        finally:
            with self._changed:
                self._starting -= 1
                self._changed.notify()
        with self._changed:
            self._zygotes.append(zygote)
        return zygote

    def _take(self, kind: Kind) -> _Zygote:
        """An idle zygote of this kind: one already there, a new one while there are fewer than `size`, or a
        new one in place of the least recently used idle one of another kind."""
        with self._changed:
            while True:
                match = next((z for z in self._idle if z.kind == kind), None)
                if match is not None:
                    self._idle.remove(match)
                    return match
                if len(self._zygotes) + self._starting < self.size or self._idle:
                    break
                self._changed.wait()
            retired = self._idle.pop(0) if len(self._zygotes) + self._starting >= self.size else None
            if retired is not None:
                self._zygotes.remove(retired)
            self._starting += 1
        if retired is not None:
            retired.close()
        return self._start(kind, reserved=True)

    def spawn(self, argv: list[str], *, env: dict[str, str], fds: list[int], log: int, kata: Kata | None = None,
              submission: Path | None = None, group: cgroup.UnitGroup | None = None) -> Unit:
        """A unit running `kata.grading.child` with `argv` and `env` in the course's folder, holding `fds`
        (named in `argv` by these numbers) and writing its stdout and stderr to `log`, forked from a zygote
        that imported the `kata`'s `warm_imports`. A sandboxed pool also needs the student's file
        (`submission`, seen as /submission/NAME) and the unit's memory cgroup (`group`)."""
        if self.sandboxed and (kata is None or submission is None or group is None):
            raise ValueError("a sandboxed pool forks a unit for a kata, a submission and a memory cgroup")
        if self.broken is not None:
            raise PoolError(self.broken)
        zygote = self._take((kata if self.sandboxed else None, kata.warm_imports if kata else ()))
        try:
            for _ in range(2):  # a zygote may die between units (killed, say): one fresh try
                if not zygote.usable():
                    zygote = self._replace(zygote)
                try:
                    pid = zygote.fork(argv, env=env, cwd=self.course.root, fds=fds, log=log,
                                      submission=submission, group=group)
                except OSError:  # the request did not reach it (`UnitLost`, where it may have, goes on up)
                    zygote.dead = True
                    continue
                unit = Unit(zygote, pid, self._ended)
                with self._changed:
                    self._units.add(unit)
                return unit
            raise PoolError("the grading zygote died before it could start the unit, and so did its replacement")
        except BaseException:
            self._give_back(zygote)
            raise

    def _replace(self, zygote: _Zygote) -> _Zygote:
        with self._changed:
            if zygote in self._zygotes:
                self._zygotes.remove(zygote)
        with contextlib.suppress(OSError):
            zygote.process.kill()
        zygote.close()
        return self._start(zygote.kind)

    def _give_back(self, zygote: _Zygote) -> None:
        """The zygote is idle again (its inbox emptied: no student's file outlives the unit)."""
        try:
            zygote.empty_inbox()
        except OSError:
            zygote.dead = True
        with self._changed:
            if zygote in self._zygotes:
                self._idle.append(zygote)
            self._changed.notify()

    def _ended(self, unit: Unit) -> None:
        with self._changed:
            self._units.discard(unit)
        self._give_back(unit._zygote)

    def pids(self) -> list[int]:
        """The zygotes' process ids (bwrap's, for a sandboxed one; for tests and benchmarks)."""
        with self._changed:
            return [z.process.pid for z in self._zygotes]

    def close(self) -> None:
        """End every zygote and every unit still running."""
        with self._changed:
            units, zygotes = list(self._units), list(self._zygotes)
            self._units.clear()
            self._zygotes.clear()
            self._idle.clear()
        for unit in units:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(unit.pid, signal.SIGKILL)
        for zygote in zygotes:
            zygote.close()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def grading_env(course: Course, runs_at_once: int = 1) -> dict[str, str]:
    """The judge's environment (and its student's process's): the course located, and torch's thread pool
    sized so that a check does not freeze the laptop (half the cores), and `runs_at_once` judges share the
    cores rather than fight over them (half the cores each: 96 threads for 16 cores, at `kata verify --jobs
    12`). (Bytecode: the judge caches the kata package's modules as any process does, and turns caching off
    before the graders are imported: see `kata.grading.child`.)"""
    env = dict(os.environ)
    env["KATA_COURSE"] = str(course.root)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env.pop("PYTHONSTARTUP", None)
    env.pop("PYTHONINSPECT", None)
    threads = str(max(1, usable_cpus() // max(2, runs_at_once)))
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        env.setdefault(name, threads)
    return env


def _warm_sandbox(course: Course, kata: Kata, folder: Path, info_write: int) -> list[str]:
    """The bwrap command line of a zygote's sandbox for `kata`, in `folder`: its inbox (`submission`,
    seen as /submission) and the placeholder for the files it may not see are made there."""
    (folder / "submission").mkdir()
    (folder / "placeholder").touch()
    return isolation.command(course, kata, folder / "submission", placeholder=folder / "placeholder",
                             warm_info_fd=info_write)


def sandboxed_problem(course: Course) -> str:
    """Why `kata grade` cannot use a warm pool here ("" if it can): no pool, no memory cgroup per unit, or
    a student's process forked in a zygote's sandbox cannot build its walls (a trial, for `kata doctor`)."""
    if not enabled():
        return f"{POOL_VARIABLE}=0"
    if not cgroup.probe().available:
        return "no memory cgroup per unit (see above)"
    if not isolation.probe().available:
        return "no sandbox (see above)"
    trial = "from kata.grading import zygote; print(zygote.trial() or 'ok')"
    with tempfile.TemporaryDirectory(prefix="kata-doctor-") as folder:
        info_read, info_write = os.pipe()
        try:
            command = _warm_sandbox(course, course.katas[0], Path(folder), info_write)
            done = subprocess.run([*command, sys.executable, "-c", trial], capture_output=True, text=True,
                                  timeout=60, pass_fds=(info_write,), cwd=course.root,
                                  env=isolation.environment(os.environ.copy()))
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"the zygote's sandbox did not start: {exc}"
        finally:
            os.close(info_write)
            os.close(info_read)
    if done.stdout.strip() == "ok":
        return ""
    return (done.stdout.strip() or (done.stderr.strip().splitlines() or ["no message"])[-1])


def enabled() -> bool:
    """Whether grading may use a pool here: `KATA_POOL` is not "0", and the system can fork."""
    return os.environ.get(POOL_VARIABLE, "1") != "0" and hasattr(os, "fork") and hasattr(socket, "send_fds")


@contextlib.contextmanager
def open_pool(course: Course, size: int, *, sandboxed: bool = False,
              warm_imports: tuple[str, ...] = ()) -> Iterator[Pool | None]:
    """A pool of `size` zygotes for the block (see `Pool`), closed after it; None where `enabled()` says no, or
    where a sandboxed one is asked for and units get no memory cgroup here."""
    if not enabled() or (sandboxed and not cgroup.probe().available):
        yield None
        return
    with Pool(course, size, sandboxed=sandboxed, warm_imports=warm_imports) as pool:
        yield pool
