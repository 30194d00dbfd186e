"""The parent side of grading: run a kata's graders in a child process and name the outcome.

The `kata` process never imports the student's code (nor torch): it parses the file itself (a syntax
error costs milliseconds), reads it for forbidden built-ins, then starts `kata.grading.child` under the
kata's time budget and memory limit, and reads the structured results it writes. Whatever happens to
the child (a timeout, a signal, `os._exit`, running out of memory, tampering) becomes a named outcome.
Given a warm pool (`kata.pool`, as `kata verify` and `kata watch` do), the child is forked from a process
that has already imported torch instead, and everything else here is the same.

The results come through a pipe, each record signed with a key made for this run and handed to the
child through another pipe (`kata.grading.protocol`, `kata.grading.sandbox`); a record the student's
code forged, or one missing from the sequence, makes the outcome "tampered". The child's own
stdout/stderr (what C code or `os.write` print past the capture) come through a third pipe, of which
only the first and last few thousand characters are kept.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kata.course import Course, Kata
from kata.grading import cgroup, isolation, protocol
from kata.grading.limits import MEMORY_EXIT_CODE
from kata.grading.scan import scan
from kata.outcomes import (
    EXIT_CRASH,
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_PASSED,
    EXIT_TIMEOUT,
    EXIT_USAGE,
    FAILED,
    NOT_IMPLEMENTED,
    PASSED,
)
from kata.pool import Pool, PoolError, Unit, UnitLost

# Kata outcomes (PASSED, FAILED and NOT_IMPLEMENTED: kata.outcomes).
SYNTAX_ERROR = protocol.SYNTAX_ERROR
IMPORT_ERROR = protocol.IMPORT_ERROR
EXCEPTION = protocol.EXCEPTION
FORBIDDEN = protocol.FORBIDDEN
TIMEOUT = "timeout"
CRASH = "crash"
INTERNAL_ERROR = "internal-error"
TAMPERED = protocol.TAMPERED  # the student's code tampered with the grading: the checks are void
MEMORY = protocol.MEMORY  # the student's code needed more memory than the kata's limit
DEVICE_UNAVAILABLE = "device-unavailable"  # --device named a device this machine lacks: nothing ran
INCOMPLETE = "incomplete"  # the checks that ran passed, but not every CPU check ran: no verdict, no points
OUTCOMES = (PASSED, FAILED, NOT_IMPLEMENTED, SYNTAX_ERROR, IMPORT_ERROR, EXCEPTION, FORBIDDEN, TIMEOUT, CRASH,
            INTERNAL_ERROR, TAMPERED, MEMORY, DEVICE_UNAVAILABLE, INCOMPLETE)

# The exit code of `kata check` for each outcome; every other outcome is EXIT_FAILED.
_EXIT_CODES = {PASSED: EXIT_PASSED, TIMEOUT: EXIT_TIMEOUT, CRASH: EXIT_CRASH, MEMORY: EXIT_CRASH,
               INTERNAL_ERROR: EXIT_INTERNAL, DEVICE_UNAVAILABLE: EXIT_USAGE}
LOG_HEAD = 2000  # characters of the child's own output kept from its start...
LOG_TAIL = 4000  # ...and from its end
RESULTS_LIMIT = 32 * 1024 * 1024  # bytes of results read at most (a real run writes a few hundred KB)
STACK_TRIES, STACK_WAIT_S = 4, 0.25  # asking a timed-out child where it is: 1 s at most


@dataclass
class Frame:
    file: str
    line: int
    function: str
    code: str


@dataclass
class Check:
    id: str
    title: str
    status: str
    message: str = ""
    device: str | None = None
    dtype: str | None = None
    weight: float = 1.0
    points: float = 0.0
    diagnoses: list[dict] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    output: str = ""
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == protocol.PASSED


@dataclass
class KataResult:
    kata: str
    file: str
    outcome: str
    message: str = ""
    checks: list[Check] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    output: str = ""
    seconds: float = 0.0
    points: float = 0.0
    max_points: float = 0.0
    devices: list[str] = field(default_factory=list)
    cuda_available: bool | None = None
    cuda_device: str | None = None
    cuda_checks_on_cpu: bool = False  # no GPU: the checks of CUDA's dtypes ran on the CPU instead (`kata verify`)
    torch: str | None = None
    seed: int = 0
    threads: int | None = None  # torch's intra-op threads in the grading process
    memory_mb: int | None = None  # the memory limit the checks ran under
    log: str = ""  # the head and tail of the child's own stdout/stderr: for course authors, never grader source
    # Every CPU check of the kata ran (none skipped, none left out by --device): only then do the points
    # stand for the kata, and only then may a pass be recorded.
    complete: bool = False
    known_diagnoses: list[str] = field(default_factory=list)  # every diagnosis id the kata's graders define

    @property
    def passed(self) -> bool:
        return self.outcome == PASSED

    @property
    def exit_code(self) -> int:
        return _EXIT_CODES.get(self.outcome, EXIT_FAILED)

    @property
    def cuda_verified(self) -> bool:
        return "cuda" in self.devices

    def to_dict(self) -> dict:
        data = asdict(self)
        data["exit_code"] = self.exit_code
        data["cuda_verified"] = self.cuda_verified
        return data


def grading_env(course: Course, runs_at_once: int = 1) -> dict[str, str]:
    """The child's environment: the course located, and torch's thread pool sized so that a check does
    not freeze the laptop (half the cores), and `runs_at_once` children share the cores rather than
    fight over them (half the cores each: 96 threads for 16 cores, at `kata verify --jobs 12`). (Bytecode:
    the child caches the kata package's modules as any process does, and turns caching off before the
    graders and the student's file are imported: see `kata.grading.child`.)"""
    env = dict(os.environ)
    env["KATA_COURSE"] = str(course.root)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env.pop("PYTHONSTARTUP", None)
    env.pop("PYTHONINSPECT", None)
    threads = str(max(1, (os.cpu_count() or 2) // max(2, runs_at_once)))
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        env.setdefault(name, threads)
    return env


class _Drain(threading.Thread):
    """Reads a pipe to its end in the background, keeping the first `head` and last `tail` bytes (or
    everything up to `head` when `tail` is 0) and counting the rest."""

    def __init__(self, fd: int, head: int, tail: int = 0):
        super().__init__(daemon=True)
        self.fd, self.head_limit, self.tail_limit = fd, head, tail
        self.head, self.tail, self.dropped = bytearray(), bytearray(), 0
        self.start()

    def run(self) -> None:
        try:
            while True:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    break
                room = self.head_limit - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                    self.received()
                if not chunk:
                    continue
                if not self.tail_limit:
                    self.dropped += len(chunk)
                    continue
                self.tail += chunk
                if len(self.tail) > self.tail_limit:
                    self.dropped += len(self.tail) - self.tail_limit
                    del self.tail[: len(self.tail) - self.tail_limit]
        finally:
            os.close(self.fd)

    def received(self) -> None:
        """More of the head arrived."""

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        if not self.dropped and not self.tail:
            return head
        gap = f"\n… {self.dropped:,} bytes not kept …\n" if self.dropped else ""
        return head + gap + self.tail.decode("utf-8", errors="replace")


class _Results(_Drain):
    """The results pipe: kept whole (up to `RESULTS_LIMIT`), each complete line verified as it arrives
    and its record handed to `on_event` (the live line of `kata check`); `stacked` is set when the
    child's stack sample arrives."""

    def __init__(self, fd: int, key: bytes, on_event: Callable[[dict], None] | None):
        self.verifier = protocol.Verifier(key)
        self.on_event = on_event
        self.stacked = threading.Event()
        self.fed = 0  # bytes of `head` already split into lines
        super().__init__(fd, RESULTS_LIMIT)

    def received(self) -> None:
        while (end := self.head.find(b"\n", self.fed)) >= 0:
            record = self.verifier.feed(bytes(self.head[self.fed:end]))
            self.fed = end + 1
            if record is None:
                continue
            if record["event"] == "stack":
                self.stacked.set()
            if self.on_event is not None:
                with contextlib.suppress(Exception):  # a display problem never costs the grade
                    self.on_event(record)


def precheck(kata: Kata, path: Path) -> KataResult | None:
    """The outcomes decided by reading the file: missing, syntax error, forbidden built-ins."""
    try:
        source = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return KataResult(kata.id, str(path), IMPORT_ERROR,
                          f"{path} does not exist (`kata reset {kata.id}` puts the stub back)")
    except (OSError, UnicodeDecodeError) as exc:
        return KataResult(kata.id, str(path), IMPORT_ERROR, f"cannot read {path}: {exc}")
    try:
        ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        code = (exc.text or "").rstrip("\n").strip()
        return KataResult(kata.id, str(path), SYNTAX_ERROR, f"{type(exc).__name__}: {exc.msg}",
                          frames=[Frame(str(path), exc.lineno or 0, "", code)])
    violations = scan(source, kata.forbidden)
    if violations:
        names = sorted({v.name for v in violations})
        return KataResult(kata.id, str(path), FORBIDDEN,
                          f"this kata asks you to write it yourself: {', '.join(names)} may not be used",
                          frames=[Frame(str(path), v.line, "", v.code) for v in violations])
    return None


class Cancelled(Exception):
    """The grading was cancelled (`cancel` set) before it finished: there is no result."""


def run_kata(course: Course, kata: Kata, student: Path | None = None, *, devices: str = "all",
             seed: int = 0, timeout: float | None = None, memory_mb: int | None = None,
             graders: Path | None = None, cancel: threading.Event | None = None,
             on_event: Callable[[dict], None] | None = None, isolate: bool = False,
             pool: Pool | None = None, runs_at_once: int = 1, cuda_checks_on_cpu: bool = False,
             settle_early: bool = False) -> KataResult:
    """Grade `student` (the kata's exercise by default) and return its structured result.

    `graders` runs the graders of another folder (an nbgrader notebook's hidden tests) instead of the
    kata's own; `timeout` and `memory_mb` override the kata's time budget and memory limit. Setting
    `cancel` (from another thread) ends the grading child and raises `Cancelled`. `on_event` is called
    (from another thread) with each verified record as the child writes it (`kata.grading.protocol`).
    `isolate` runs the child in an operating-system sandbox (`kata.grading.isolation`; OSError where
    there is none) on a private copy of the student's file; the result names the file as given. `pool`
    forks the child from a warm zygote (`kata.pool`) instead of starting it cold: an isolated child only
    from a sandboxed pool, where units get a memory cgroup (else it starts cold in a sandbox of its own).
    `runs_at_once`: how many grading children the caller runs in parallel, to size a cold child's threads.
    `cuda_checks_on_cpu`: where torch sees no GPU, the CPU runs the checks of CUDA's dtypes too (half
    precision): for `kata verify`, never for a grade, whose checks are the same on every machine.
    `settle_early`: once a check has failed, the checks marked `verdict_only` (which name no mistake) are
    skipped: for `kata verify`'s planted mistakes, whose verdict and diagnoses those checks cannot change."""
    path = (student or kata.exercise).resolve() if not isolate else Path(os.path.abspath(student or kata.exercise))
    started = time.perf_counter()
    early = precheck(kata, path)
    if early is not None:
        early.seconds = time.perf_counter() - started
        return early
    if not isolate:
        run = _Run(course, kata, path, devices=devices, seed=seed, memory_mb=memory_mb, graders=graders,
                   on_event=on_event, pool=pool, runs_at_once=runs_at_once, cuda_checks_on_cpu=cuda_checks_on_cpu,
                   settle_early=settle_early)
        return run.finish(kata.time_budget_s if timeout is None else timeout, started, cancel)
    memory = kata.memory_mb if memory_mb is None else memory_mb
    place = cgroup.probe().place
    warm = pool is not None and pool.sandboxed and pool.broken is None and place is not None and graders is None
    inside = Path(isolation.SUBMISSION_DIR) / path.name
    with tempfile.TemporaryDirectory(prefix="kata-unit-") as private, contextlib.ExitStack() as stack:
        group = None
        if place is not None:  # a limit that counts shared memory too (`kata.grading.cgroup`)
            group = stack.enter_context(cgroup.unit(place, cgroup.limit_bytes(memory, isolation.TMPFS_MB)))
        if warm:  # forked in a zygote's sandbox of this kata, which shows it `path` as `inside`
            try:
                run = _Run(course, kata, inside, devices=devices, seed=seed, memory_mb=memory, graders=None,
                           on_event=on_event, memory_group=group, pool=pool, submission=path)
            except PoolError:  # this unit starts cold (and so do the next where no zygote can start: `pool.broken`)
                warm = False
        if not warm:
            copy = Path(private) / "submission" / path.name
            copy.parent.mkdir()
            copy.write_bytes(path.read_bytes())
            placeholder = Path(private) / "placeholder"
            placeholder.touch()
            wrapper = isolation.command(course, kata, copy.parent, graders=graders, placeholder=placeholder)
            if group is not None:
                wrapper = [*group.enter(), *wrapper]
            run = _Run(course, kata, inside, devices=devices, seed=seed, memory_mb=memory, graders=graders,
                       on_event=on_event, wrapper=wrapper, memory_group=group, runs_at_once=runs_at_once)
        result = run.finish(kata.time_budget_s if timeout is None else timeout, started, cancel)
    result.file = str(path)
    for frame in result.frames + [f for c in result.checks for f in c.frames]:
        if frame.file == str(inside):
            frame.file = str(path)
    return result


class _Run:
    """One grading child: started (cold, or forked from a `pool`'s zygote), then waited for (under the
    budget) and its results interpreted."""

    def __init__(self, course: Course, kata: Kata, path: Path, *, devices: str, seed: int, memory_mb: int | None,
                 graders: Path | None, wait: bool = False, on_event: Callable[[dict], None] | None = None,
                 wrapper: list[str] | None = None, memory_group: cgroup.UnitGroup | None = None,
                 pool: Pool | None = None, submission: Path | None = None, runs_at_once: int = 1,
                 cuda_checks_on_cpu: bool = False, settle_early: bool = False):
        self.kata, self.path = kata, path
        self.isolated = wrapper is not None or submission is not None  # `submission`: in a sandboxed pool
        self.memory_group = memory_group
        self.memory = kata.memory_mb if memory_mb is None else memory_mb
        start = functools.partial(self._start, course, kata, path, devices=devices, seed=seed, graders=graders,
                                  wait=wait, on_event=on_event, wrapper=wrapper, pool=pool, submission=submission,
                                  runs_at_once=runs_at_once, cuda_checks_on_cpu=cuda_checks_on_cpu,
                                  settle_early=settle_early)
        try:
            start()
        except UnitLost:
            # Its zygote died as it forked: that unit may hold the pipes, closed at our end now (so it ends, and
            # what it writes reaches no one). Another zygote gets new pipes and a new key.
            start()

    def _start(self, course: Course, kata: Kata, path: Path, *, devices: str, seed: int, graders: Path | None,
               wait: bool, on_event: Callable[[dict], None] | None, wrapper: list[str] | None, pool: Pool | None,
               submission: Path | None, runs_at_once: int, cuda_checks_on_cpu: bool, settle_early: bool) -> None:
        """The child started, with its pipes and key; on any failure every pipe is closed at our end."""
        self.key = secrets.token_bytes(32)
        key_read, key_write = os.pipe()
        results_read, results_write = os.pipe()
        go_read, self.go = os.pipe() if wait else (None, None)
        # Held open here for the child's life: when this process ends, killed or not, so does the child.
        lifeline_read, self.lifeline = os.pipe()
        try:
            os.write(key_write, self.key)  # 32 bytes: far below a pipe's buffer, never blocks
        finally:
            os.close(key_write)
        passed = [key_read, results_write, lifeline_read] + ([go_read] if wait else [])
        argv = [kata.id, str(path), f"fd:{results_write}",
                *([f"--kata-graders={Path(graders).resolve()}"] if graders is not None else []),
                f"--kata-key-fd={key_read}", f"--kata-lifeline-fd={lifeline_read}", f"--kata-memory-mb={self.memory}",
                *([f"--kata-go-fd={go_read}"] if wait else []),
                f"--kata-devices={devices}", f"--kata-seed={seed}",
                *(["--kata-cuda-checks-on-cpu"] if cuda_checks_on_cpu else []),
                *(["--kata-settle-early"] if settle_early else [])]
        command = [sys.executable, "-m", "kata.grading.child", *argv]
        env = grading_env(course, runs_at_once)
        if wrapper is not None:
            command = [*wrapper, *command]
        if self.isolated:
            env = isolation.environment(env)
        log_read, log_write = os.pipe()  # the child's stdout and stderr
        try:
            if pool is not None:
                self.child = pool.spawn(argv, env=env, fds=passed, log=log_write, kata=kata, submission=submission,
                                        group=self.memory_group)
            else:
                self.child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log_write,
                                              stderr=subprocess.STDOUT, env=env, cwd=course.root,
                                              start_new_session=True, pass_fds=tuple(passed))
        except BaseException:
            os.close(log_read)
            os.close(results_read)
            os.close(self.lifeline)
            if self.go is not None:
                os.close(self.go)
            raise
        finally:
            for fd in [*passed, log_write]:
                os.close(fd)
        self.results = _Results(results_read, self.key, on_event)
        self.log = _Drain(log_read, LOG_HEAD, LOG_TAIL)

    def alive(self) -> bool:
        return self.child.poll() is None

    def start(self) -> bool:
        """Let a waiting child import the student's file and run the checks; False if it is gone."""
        if self.go is None:
            return True
        try:
            os.write(self.go, b"g")
            return True
        except OSError:
            return False
        finally:
            os.close(self.go)
            self.go = None

    def close(self) -> None:
        if self.go is not None:
            os.close(self.go)
            self.go = None
        _kill_group(self.child)
        if self.lifeline is not None:
            os.close(self.lifeline)
            self.lifeline = None
        self.results.join(5)
        self.log.join(5)

    def _wait(self, budget: float, cancel: threading.Event | None) -> bool:
        """Wait for the child; True if it outlived the budget."""
        deadline = time.monotonic() + budget
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                # Popen.wait polls every 50 ms at most, so slices cost no latency.
                self.child.wait(timeout=remaining if cancel is None else min(remaining, 0.2))
                return False
            except subprocess.TimeoutExpired:
                if cancel is not None and cancel.is_set():
                    raise Cancelled from None
        return self.child.poll() is None

    def _sample_stack(self) -> None:
        """Ask the child where the student's code is (`protocol.STACK_SIGNAL`), and give it a moment to
        say: a Python loop answers within milliseconds; a long C call (a huge matmul) may not in time."""
        number = getattr(signal, protocol.STACK_SIGNAL, None)
        # An isolated child runs under the sandbox's init, which passes no signal on: found in its cgroup.
        target = self.memory_group.grading_pid() if self.isolated and self.memory_group else self.child.pid
        if number is None or target is None:
            return
        for _ in range(STACK_TRIES):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(target, number)
            if self.results.stacked.wait(STACK_WAIT_S) or not self.alive():
                return

    def finish(self, budget: float, started: float, cancel: threading.Event | None = None) -> KataResult:
        try:
            timed_out = self._wait(budget, cancel)
            if timed_out:
                self._sample_stack()
        finally:
            # Also on Ctrl-C: the child's whole process group goes, then the interrupt goes on.
            self.close()
        stream = self.results.verifier.stream
        if self.results.dropped:
            stream.problems.append(f"the results ran past {RESULTS_LIMIT:,} bytes")
        returncode = self.child.returncode
        if self.isolated and 128 < returncode < 128 + 65:
            returncode = 128 - returncode  # bwrap's status for a child killed by a signal: 128 + the signal
        if self.memory_group is not None and self.memory_group.oom_killed():
            returncode = MEMORY_EXIT_CODE  # the kernel ended the unit at its cgroup's limit
        result = _interpret(self.kata, self.path, stream, returncode, timed_out, budget, self.log.text())
        result.memory_mb = self.memory
        result.seconds = time.perf_counter() - started
        return result


class Prepared:
    """A grading child started ahead of time (`kata watch`): torch, pytest, the reference and the
    graders are loaded and the process sealed, and it waits to import the student's file until
    `run()`, which then costs the checks alone. One use; the time budget starts at `run()`. Given a `pool`, the
    child is forked from its zygote (`kata.pool`; `PoolError` where the pool cannot start one)."""

    def __init__(self, course: Course, kata: Kata, *, devices: str = "all", seed: int = 0, pool: Pool | None = None):
        self.course, self.kata = course, kata
        self._run = _Run(course, kata, kata.exercise.resolve(), devices=devices, seed=seed, memory_mb=None,
                         graders=None, wait=True, pool=pool)
        self.used = False

    def alive(self) -> bool:
        return not self.used and self._run.alive()

    def run(self, timeout: float | None = None, on_event: Callable[[dict], None] | None = None) -> KataResult | None:
        """Grade the kata's exercise as it is now; None if this child cannot (it died, or went with its zygote
        while grading: start another).

        A file that does not parse or names a forbidden built-in is refused without using the child.
        `on_event`: as for `run_kata`, from the import of the student's file on."""
        started = time.perf_counter()
        early = precheck(self.kata, self._run.path)
        if early is not None:
            early.seconds = time.perf_counter() - started
            return early
        if self.used or not self.alive():
            return None
        self._run.results.on_event = on_event  # before the child goes on: no record is missed
        if not self._run.start():
            return None
        self.used = True
        result = self._run.finish(self.kata.time_budget_s if timeout is None else timeout, started)
        # Killed because its zygote died (`kata.pool.Unit.orphaned`): the result says nothing of the student's file.
        return None if getattr(self._run.child, "orphaned", False) else result

    def close(self) -> None:
        self.used = True
        self._run.close()


def prepare_kata(course: Course, kata: Kata, *, devices: str = "all", pool: Pool | None = None) -> Prepared | None:
    """A `Prepared` child for the kata's exercise (from `pool` as `Prepared` says), or None where that is not
    possible."""
    try:
        return Prepared(course, kata, devices=devices, pool=pool)
    except OSError:
        return None


def _kill_group(child: subprocess.Popen | Unit) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def _frames(records: list[dict]) -> list[Frame]:
    return [Frame(**r) for r in records]


def _stack_frames(stack: dict | None, path: Path) -> list[Frame]:
    """The frames of a `stack` record, each with its line read here from the student's file (the child
    sends frames in the student's files only; any other file is not read)."""
    if stack is None:
        return []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    frames = []
    for record in stack.get("frames", []):
        file, line = str(record.get("file", "")), int(record.get("line") or 0)
        code = lines[line - 1].strip() if file == str(path) and 0 < line <= len(lines) else ""
        frames.append(Frame(file, line, str(record.get("function", "")), code))
    return frames


def _interpret(kata: Kata, path: Path, stream: protocol.Stream, returncode: int, timed_out: bool,
               budget: float, log: str) -> KataResult:
    events = stream.events
    result = KataResult(kata.id, str(path), INTERNAL_ERROR, log=log)
    session = next((e for e in events if e["event"] == "session"), {})
    result.devices = session.get("devices", [])
    result.cuda_available = session.get("cuda")
    result.cuda_device = session.get("cuda_device")
    result.cuda_checks_on_cpu = bool(session.get("cuda_checks_on_cpu"))
    result.torch = session.get("torch")
    result.seed = session.get("seed", 0)
    result.threads = session.get("threads")
    if session and not result.devices:
        result.outcome = DEVICE_UNAVAILABLE
        result.message = (f"--device {session.get('requested')}: torch sees no such device here; this machine has: "
                          f"{', '.join(session.get('available') or ['cpu'])}")
        return result

    begun: dict[str, str] = {}  # id -> title of each check that started
    announced: int | None = None
    imported = None
    for event in events:
        if event["event"] == "import":
            result.output = event.get("output", "")
            announced = event.get("checks")
            result.known_diagnoses = list(event.get("diagnoses") or [])
            imported = event
        elif event["event"] == "begin":
            begun[event["id"]] = event.get("title") or event["id"]
        elif event["event"] == "check":
            fields = {k: v for k, v in event.items() if k in _CHECK_FIELDS}
            fields["frames"] = _frames(fields.get("frames", []))
            result.checks.append(Check(**fields))
    _score(kata, result)
    result.complete = "cpu" in result.devices and not any(c.status == protocol.SKIPPED for c in result.checks)
    finished = {c.id for c in result.checks}
    running = next((cid for cid in reversed(begun) if cid not in finished), None)
    during = f" (during check {running}: \"{begun[running]}\")" if running else ""
    tampering = [e for e in events if e["event"] == "tamper"]

    if stream.problems or tampering:
        result.outcome = TAMPERED
        if tampering:
            first = tampering[0]
            result.message = first.get("message", "tampering")
            if first.get("file"):
                result.frames = [Frame(first["file"], int(first.get("line") or 0), "", "")]
        else:
            result.message = f"the results of the checks were altered: {stream.problems[0]}"
        result.message += ". The checks of this run do not count."
        result.points = 0.0
        return result
    if imported is not None and imported.get("status") != protocol.IMPORT_OK:
        result.outcome = imported["status"]
        result.message = imported.get("message", "")
        result.frames = _frames(imported.get("frames", []))
        return result
    if timed_out:
        result.outcome = TIMEOUT
        result.message = f"ran longer than {budget:g} s, the kata's time budget{during}: an infinite loop?"
        stack = next((e for e in events if e["event"] == "stack"), None)
        result.frames = _stack_frames(stack, path)
        if result.frames:
            last = result.frames[-1]
            result.message += f" When time ran out, your code was at line {last.line} ({last.function})."
        elif stack is not None:
            result.message += " When time ran out, none of your code was running (the graders were)."
    elif returncode == MEMORY_EXIT_CODE:
        result.outcome = MEMORY
        result.message = f"used more memory than the kata's limit{during}"
    elif returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        cause = " (out of memory?)" if -returncode == signal.SIGKILL else ""
        result.outcome = CRASH
        result.message = f"the grading process was killed by {name}{cause}{during}"
    elif not any(e["event"] == "end" for e in events):
        result.outcome = CRASH
        result.message = (f"the grading process ended early with exit code {returncode}{during}: "
                          "did your code call os._exit() or sys.exit(), or crash the interpreter?")
    elif not session or (not result.checks and not announced):
        result.outcome = INTERNAL_ERROR
        result.message = f"the graders of kata {kata.id} did not run (pytest exit code {returncode})"
    elif announced is not None and len(result.checks) < announced:
        result.outcome = CRASH
        result.message = (f"the grading stopped after {len(result.checks)} of {announced} checks{during}: did your "
                          "code raise KeyboardInterrupt or call pytest.exit()?")
    else:
        statuses = {c.status for c in result.checks} - {protocol.SKIPPED}  # skipped: see `_incomplete`
        if statuses == {protocol.PASSED}:
            result.outcome = PASSED
        elif protocol.TAMPERED in statuses:
            result.outcome = TAMPERED
        elif protocol.MEMORY in statuses:
            result.outcome = MEMORY
        elif protocol.FORBIDDEN in statuses:
            result.outcome = FORBIDDEN
        elif statuses == {protocol.NOT_IMPLEMENTED}:
            result.outcome = NOT_IMPLEMENTED
        else:
            result.outcome = FAILED
        failing = sum(not c.passed for c in result.checks)
        result.message = (f"all {len(result.checks)} checks passed" if result.outcome == PASSED
                          else f"{failing} of {len(result.checks)} checks did not pass")
        if not result.complete:
            _incomplete(result)
        if result.outcome == MEMORY:
            first = next(c for c in result.checks if c.status == protocol.MEMORY)
            result.message = first.message
        elif result.outcome == TAMPERED:
            first = next(c for c in result.checks if c.status == protocol.TAMPERED)
            result.message = first.message + ". The checks of this run do not count."
            result.points = 0.0
    return result


def not_recorded(kata: Kata, result: KataResult, devices: str = "all") -> str | None:
    """Why this result does not go into the progress file (None: it does). A kata's status is what its
    own exercise file gets from every CPU check: another file (`--file`), part of the checks
    (`--device cuda`) or graders that could not run say nothing about it."""
    if result.outcome in (INTERNAL_ERROR, DEVICE_UNAVAILABLE):
        return "the checks did not run"
    if Path(result.file).resolve() != kata.exercise.resolve():
        return f"you checked another file than {kata.exercise.name} of kata {kata.id}"
    if devices == "cuda" or result.outcome == INCOMPLETE:
        return "not every CPU check ran"
    return None


def _incomplete(result: KataResult) -> None:
    """Not every CPU check ran: what ran is reported, but the kata is neither passed nor scored."""
    skipped = sum(c.status == protocol.SKIPPED for c in result.checks)
    why = (f"only the {', '.join(result.devices)} checks ran" if "cpu" not in result.devices
           else f"{skipped} of {len(result.checks)} checks were skipped")
    if result.outcome == PASSED:
        result.outcome = INCOMPLETE
        result.message = f"the checks that ran passed, but {why}"
    else:
        result.message += f" ({why})"
    result.message += ": no points for part of a kata; a check on the CPU grades it whole"
    result.points = 0.0
    for check in result.checks:
        check.points = 0.0


_CHECK_FIELDS = {"id", "title", "status", "message", "device", "dtype", "weight", "points", "diagnoses", "frames",
                 "output", "seconds"}


def _score(kata: Kata, result: KataResult) -> None:
    """Each check is worth the kata's points times its weight over the total weight. The kata's score is
    one product and one quotient (not a sum of shares), so passing every check gives exactly its points,
    as in the nbgrader export (`kata.nbgrader.runtime.score_of`)."""
    total = sum(c.weight for c in result.checks)
    for check in result.checks:
        check.points = kata.points * check.weight / total if total else 0.0
    result.max_points = kata.points
    passed = sum(c.weight for c in result.checks if c.passed)
    result.points = kata.points * passed / total if total else 0.0
