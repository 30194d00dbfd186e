"""The parent side of grading: run a kata's graders in a child process and name the outcome.

The `kata` process never imports the student's code (nor torch): it parses the file itself (a syntax
error costs milliseconds), reads it for forbidden built-ins, then starts the judge, `kata.grading.child`,
which forks the student's process, grades it under the kata's time budget and memory limit, and writes
structured results; this side reads them and names the outcome. Whatever happens to the student's process
(a timeout, a signal, `os._exit`, running out of memory) the judge reports; whatever happens to the judge
itself (killed, or stuck past the budget and a grace) becomes a named outcome here. Given a warm pool
(`kata.pool`, as `kata verify`, `kata watch` and `kata grade` do), the judge is forked from a process that
has already imported torch instead, and everything else here is the same.

The results come through a pipe only the judge writes (`kata.grading.protocol`). The judge's stdout and
stderr, and the student's process's own (what C code or `os.write` print past its capture), come through
another pipe, of which only the first and last few thousand characters are kept.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kata import scoring
from kata.course import Course, Kata
from kata.grading import cgroup, isolation, protocol
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
from kata.pool import Pool, PoolError, Unit, UnitLost, grading_env
from kata.student.walls import MEMORY_EXIT_CODE

# Kata outcomes (PASSED, FAILED and NOT_IMPLEMENTED: kata.outcomes).
SYNTAX_ERROR = protocol.SYNTAX_ERROR
IMPORT_ERROR = protocol.IMPORT_ERROR
EXCEPTION = protocol.EXCEPTION
FORBIDDEN = protocol.FORBIDDEN
TIMEOUT = "timeout"
CRASH = "crash"
INTERNAL_ERROR = "internal-error"
MEMORY = protocol.MEMORY  # the student's code needed more memory than the kata's limit
DEVICE_UNAVAILABLE = "device-unavailable"  # --device named a device this machine lacks: nothing ran
INCOMPLETE = "incomplete"  # the checks that ran passed, but not every CPU check ran: no verdict, no points
OUTCOMES = (PASSED, FAILED, NOT_IMPLEMENTED, SYNTAX_ERROR, IMPORT_ERROR, EXCEPTION, FORBIDDEN, TIMEOUT, CRASH,
            INTERNAL_ERROR, MEMORY, DEVICE_UNAVAILABLE, INCOMPLETE)

# The exit code of `kata check` for each outcome; every other outcome is EXIT_FAILED.
_EXIT_CODES = {PASSED: EXIT_PASSED, TIMEOUT: EXIT_TIMEOUT, CRASH: EXIT_CRASH, MEMORY: EXIT_CRASH,
               INTERNAL_ERROR: EXIT_INTERNAL, DEVICE_UNAVAILABLE: EXIT_USAGE}
LOG_HEAD = 2000  # characters of the child's own output kept from its start...
LOG_TAIL = 4000  # ...and from its end
RESULTS_LIMIT = 32 * 1024 * 1024  # bytes of results read at most (a real run writes a few hundred KB)
# The judge ends the student's process at the budget; the judge itself gets this much more (its own start,
# the stack sample, writing the last records) before it is ended from here.
GRACE_S = 20.0


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
    critical: bool = False  # planned as critical (the import record): when it does not pass, the score is capped
    structural: bool = False  # compares no value with a truth: counts only beside a passing check of values
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
    total_weight: float = 0.0  # the weights of every check that was to run (those a crash left unrun too)
    # The critical checks that were to run and did not pass (failed, or left unrun by a crash): the score is
    # then at most `cap` points (`kata.scoring`); `cap` is None when every critical check passed.
    critical_failed: list[str] = field(default_factory=list)
    cap: float | None = None
    walls: dict = field(default_factory=dict)  # what the student's process stood in (`kata.student.walls`)
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

    @property
    def capped_off(self) -> float:
        """The points the cap took (`kata.scoring`): what the passed checks are worth beyond the score."""
        if self.cap is None:
            return 0.0
        return max(0.0, sum(c.points for c in self.checks if c.passed) - self.points)

    def critical_titles(self) -> list[str]:
        """The titles of the critical checks that did not pass (the id of one that never ran)."""
        titles = {c.id: c.title for c in self.checks}
        return [titles.get(cid, cid) for cid in self.critical_failed]

    def to_dict(self) -> dict:
        data = asdict(self)
        data["exit_code"] = self.exit_code
        data["cuda_verified"] = self.cuda_verified
        data["capped_off"] = self.capped_off
        return data


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
    """The results pipe: kept whole (up to `RESULTS_LIMIT`), each complete line read as it arrives and its
    record handed to `on_event` (the live line of `kata check`)."""

    def __init__(self, fd: int, on_event: Callable[[dict], None] | None):
        self.reader = protocol.Reader()
        self.on_event = on_event
        self.fed = 0  # bytes of `head` already split into lines
        super().__init__(fd, RESULTS_LIMIT)

    def received(self) -> None:
        while (end := self.head.find(b"\n", self.fed)) >= 0:
            record = self.reader.feed(bytes(self.head[self.fed:end]))
            self.fed = end + 1
            if record is None:
                continue
            if self.on_event is not None:
                with contextlib.suppress(Exception):  # a display problem never costs the grade
                    self.on_event(record)


# CPython 3.11's AST converter keeps its recursion depth in state that threads share (gh-106905): two runs
# parsing at once (verify's and a pool's threads) can fail with "AST constructor recursion depth mismatch".
_PARSING = threading.Lock()


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
        with _PARSING:
            ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        code = (exc.text or "").rstrip("\n").strip()
        return KataResult(kata.id, str(path), SYNTAX_ERROR, f"{type(exc).__name__}: {exc.msg}",
                          frames=[Frame(str(path), exc.lineno or 0, "", code)])
    with _PARSING:
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
             settle_early: bool = False, credit: bool = False) -> KataResult:
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
    skipped: for `kata verify`'s planted mistakes, whose verdict and diagnoses those checks cannot change.
    `credit`: a grade that counts: the student's file is not run where its process has no walls
    (`kata.student.walls`: namespaces of its own, or another user), and the outcome is an internal error."""
    path = (student or kata.exercise).resolve() if not isolate else Path(os.path.abspath(student or kata.exercise))
    budget = kata.time_budget_s if timeout is None else timeout
    started = time.perf_counter()
    early = precheck(kata, path)
    if early is not None:
        early.seconds = time.perf_counter() - started
        return early
    if not isolate:
        run = _Run(course, kata, path, budget=budget, devices=devices, seed=seed, memory_mb=memory_mb,
                   graders=graders, on_event=on_event, pool=pool, runs_at_once=runs_at_once,
                   cuda_checks_on_cpu=cuda_checks_on_cpu, settle_early=settle_early, credit=credit)
        return run.finish(budget, started, cancel)
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
                run = _Run(course, kata, inside, budget=budget, devices=devices, seed=seed, memory_mb=memory,
                           graders=None, on_event=on_event, memory_group=group, pool=pool, submission=path,
                           credit=credit)
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
            run = _Run(course, kata, inside, budget=budget, devices=devices, seed=seed, memory_mb=memory,
                       graders=graders, on_event=on_event, wrapper=wrapper, memory_group=group,
                       runs_at_once=runs_at_once, credit=credit)
        result = run.finish(budget, started, cancel)
    result.file = str(path)
    for frame in result.frames + [f for c in result.checks for f in c.frames]:
        if frame.file == str(inside):
            frame.file = str(path)
    return result


class _Run:
    """One judge: started (cold, or forked from a `pool`'s zygote), then waited for (under the budget and a
    grace) and its results interpreted. `budget` None: the judge waits (`wait`) and is told it at `start`."""

    def __init__(self, course: Course, kata: Kata, path: Path, *, budget: float | None, devices: str, seed: int,
                 memory_mb: int | None,
                 graders: Path | None, wait: bool = False, on_event: Callable[[dict], None] | None = None,
                 wrapper: list[str] | None = None, memory_group: cgroup.UnitGroup | None = None,
                 pool: Pool | None = None, submission: Path | None = None, runs_at_once: int = 1,
                 cuda_checks_on_cpu: bool = False, settle_early: bool = False, credit: bool = False):
        isolation.undumpable()  # the student's process, maybe of the same user, cannot reach into this one
        self.kata, self.path = kata, path
        self.isolated = wrapper is not None or submission is not None  # `submission`: in a sandboxed pool
        self.memory_group = memory_group
        self.memory = kata.memory_mb if memory_mb is None else memory_mb
        start = functools.partial(self._start, course, kata, path, budget=budget, devices=devices, seed=seed,
                                  graders=graders,
                                  wait=wait, on_event=on_event, wrapper=wrapper, pool=pool, submission=submission,
                                  runs_at_once=runs_at_once, cuda_checks_on_cpu=cuda_checks_on_cpu,
                                  settle_early=settle_early, credit=credit)
        try:
            start()
        except UnitLost:
            # Its zygote died as it forked: that unit may hold the pipes, closed at our end now (so it ends, and
            # what it writes reaches no one). Another zygote gets new pipes.
            start()

    def _start(self, course: Course, kata: Kata, path: Path, *, budget: float | None, devices: str, seed: int,
               graders: Path | None, wait: bool, on_event: Callable[[dict], None] | None, wrapper: list[str] | None,
               pool: Pool | None, submission: Path | None, runs_at_once: int, cuda_checks_on_cpu: bool,
               settle_early: bool, credit: bool) -> None:
        """The judge started, with its pipes; on any failure every pipe is closed at our end."""
        results_read, results_write = os.pipe()
        go_read, self.go = os.pipe() if wait else (None, None)
        # Held open here for the judge's life: when this process ends, killed or not, so does the judge.
        lifeline_read, self.lifeline = os.pipe()
        passed = [results_write, lifeline_read] + ([go_read] if wait else [])
        argv = [kata.id, str(path), f"fd:{results_write}",
                *([f"--kata-graders={Path(graders).resolve()}"] if graders is not None else []),
                f"--kata-lifeline-fd={lifeline_read}", f"--kata-memory-mb={self.memory}",
                *([f"--kata-go-fd={go_read}"] if wait else [f"--kata-budget={budget:g}"]),
                *(["--kata-require-walls"] if credit else []),
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
        self.results = _Results(results_read, on_event)
        self.log = _Drain(log_read, LOG_HEAD, LOG_TAIL)

    def alive(self) -> bool:
        return self.child.poll() is None

    def start(self, budget: float) -> bool:
        """Let a waiting judge run the student's file and the checks under `budget`; False if it is gone."""
        if self.go is None:
            return True
        try:
            os.write(self.go, f"{budget:g}\n".encode())
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
        """Wait for the judge; True if it outlived the budget and the grace."""
        deadline = time.monotonic() + budget + GRACE_S
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                # Popen.wait polls every 50 ms at most, so slices cost no latency.
                self.child.wait(timeout=remaining if cancel is None else min(remaining, 0.2))
                return False
            except subprocess.TimeoutExpired:
                if cancel is not None and cancel.is_set():
                    raise Cancelled from None
        return self.child.poll() is None

    def finish(self, budget: float, started: float, cancel: threading.Event | None = None) -> KataResult:
        try:
            timed_out = self._wait(budget, cancel)
        finally:
            # Also on Ctrl-C: the child's whole process group goes, then the interrupt goes on.
            self.close()
        stream = self.results.reader.stream
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
    """A judge started ahead of time (`kata watch`): torch, pytest, the reference and the graders are loaded
    and the student's process is forked and walled, and it waits to run the student's file until `run()`,
    which then costs the checks alone. One use; the time budget starts at `run()`. Given a `pool`, the
    child is forked from its zygote (`kata.pool`; `PoolError` where the pool cannot start one)."""

    def __init__(self, course: Course, kata: Kata, *, devices: str = "all", seed: int = 0, pool: Pool | None = None):
        self.course, self.kata = course, kata
        self._run = _Run(course, kata, kata.exercise.resolve(), budget=None, devices=devices, seed=seed,
                         memory_mb=None, graders=None, wait=True, pool=pool)
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
        self._run.results.on_event = on_event  # before the judge goes on: no record is missed
        budget = self.kata.time_budget_s if timeout is None else timeout
        if not self._run.start(budget):
            return None
        self.used = True
        result = self._run.finish(budget, started)
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
    planned: list[float] | None = None  # the weight of every check that was to run
    critical: list[str] = []  # the ids of the critical checks that were to run
    imported = gone = None
    for event in events:
        if event["event"] == "import":
            result.output = event.get("output", "")
            announced = event.get("checks")
            planned = event.get("weights")
            listed = event.get("critical")
            critical = [c for c in listed if isinstance(c, str)] if isinstance(listed, list) else []
            result.known_diagnoses = list(event.get("diagnoses") or [])
            imported = event
        elif event["event"] == "begin":
            begun[event["id"]] = event.get("title") or event["id"]
        elif event["event"] == "check":
            fields = {k: v for k, v in event.items() if k in _CHECK_FIELDS}
            fields["frames"] = _frames(fields.get("frames", []))
            result.checks.append(Check(**fields))
        elif event["event"] == "gone" and gone is None:
            gone = event
    _gate(result)
    _score(kata, result, planned, critical)
    result.walls = (imported or {}).get("walls") or {}
    result.complete = "cpu" in result.devices and not any(c.status == protocol.SKIPPED for c in result.checks)
    finished = {c.id for c in result.checks}
    running = gone["check"] if gone else next((cid for cid in reversed(begun) if cid not in finished), None)
    during = f" (during check {running}: \"{begun.get(running, running)}\")" if running else ""

    if stream.problems:
        result.outcome = INTERNAL_ERROR
        result.message = f"the results of the checks are cut or garbled ({stream.problems[0]}): the judge failed"
        result.points, result.cap, result.critical_failed = 0.0, None, []
        return result
    if imported is not None and imported.get("status") != protocol.IMPORT_OK:
        result.outcome = {protocol.TIMEOUT: TIMEOUT, protocol.CRASH: CRASH}.get(imported["status"], imported["status"])
        result.message = imported.get("message", "")
        result.frames = _frames(imported.get("frames", []))
        return result
    if gone is not None:
        result.frames = _frames(gone.get("frames") or [])
        if gone.get("kind") == "timeout":
            result.outcome = TIMEOUT
            result.message = f"ran longer than {budget:g} s, the kata's time budget{during}: an infinite loop?"
            if result.frames:
                last = result.frames[-1]
                result.message += f" When time ran out, your code was at line {last.line} ({last.function})."
        elif gone.get("kind") == "memory":
            result.outcome = MEMORY
            result.message = f"used more memory than the kata's limit{during}"
        else:
            result.outcome = CRASH
            result.message = f"{gone.get('message') or 'your code ended'}{during}"
    elif timed_out:
        result.outcome = TIMEOUT
        result.message = (f"ran longer than {budget:g} s, the kata's time budget{during}. When time ran out, none "
                          "of your code was running (the graders were).")
    elif returncode == MEMORY_EXIT_CODE:
        result.outcome = MEMORY
        result.message = f"used more memory than the kata's limit{during}"
    elif returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        cause = " (by your code, or for want of memory?)" if -returncode == signal.SIGKILL else ""
        result.outcome = CRASH
        result.message = f"the grading process was killed by {name}{cause}{during}"
    elif not any(e["event"] == "end" for e in events):
        result.outcome = CRASH
        result.message = f"the grading process ended early with exit code {returncode}{during}"
    elif not session or (not result.checks and not announced):
        result.outcome = INTERNAL_ERROR
        result.message = f"the graders of kata {kata.id} did not run (pytest exit code {returncode})"
    elif announced is not None and len(result.checks) < announced:
        result.outcome = CRASH
        result.message = f"the grading stopped after {len(result.checks)} of {announced} checks{during}"
    else:
        statuses = {c.status for c in result.checks} - {protocol.SKIPPED}  # skipped: see `_incomplete`
        if statuses == {protocol.PASSED}:
            result.outcome = PASSED
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
    return result


def describe_walls(walls: dict) -> str:
    """What a result's `walls` (`kata.student.walls.Report`) say, in a few words for reports."""
    if not walls:
        return "the student's process: no report of its walls"
    user = " as user nobody" if walls.get("user") == "nobody" else ""
    if walls.get("namespaces"):
        return (f"the student's process{user} in namespaces of its own (files read-only, graders hidden, no "
                "network)")
    return f"the student's process{user} without namespaces ({walls.get('problem') or 'none here'})"


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


_CHECK_FIELDS = {"id", "title", "status", "message", "device", "dtype", "weight", "points", "structural", "diagnoses",
                 "frames", "output", "seconds"}
UNEARNED = ("holds, but counts only beside a check of the values: no check that compares your results with the "
            "right ones passed, and a constant answer could pass this one")


def _gate(result: KataResult) -> None:
    """A check marked structural (shapes, dtypes, unchanged inputs, relations among the student's own outputs)
    that passed does not count where no check of the values passed: a program that computes nothing (a
    constant, zeros of the right shape) earns nothing."""
    if any(c.passed and not c.structural for c in result.checks):
        return
    for check in result.checks:
        if check.passed and check.structural:
            check.status, check.message = protocol.FAILED, UNEARNED


def _score(kata: Kata, result: KataResult, planned: list[float] | None, critical: list[str]) -> None:
    """Each check is worth the kata's points times its weight over the total weight of every check that was
    to run (`planned`; a check that never ran, after a crash, earns nothing); when a check planned as
    critical (`critical`, ids) did not pass, the score is capped (`kata.scoring`). The rule is
    `kata.scoring.earned`, which the nbgrader export (`kata.nbgrader.runtime.score_of`) applies too."""
    recorded = sum(c.weight for c in result.checks)
    valid = isinstance(planned, list) and all(isinstance(w, (int, float)) for w in planned)
    total = max(recorded, float(sum(planned))) if valid else recorded
    result.total_weight = total
    passed_ids = {c.id for c in result.checks if c.passed}
    result.critical_failed = [cid for cid in dict.fromkeys(critical) if cid not in passed_ids]
    for check in result.checks:
        check.points = kata.points * check.weight / total if total else 0.0
        check.critical = check.id in critical
    result.max_points = kata.points
    result.cap = kata.points * scoring.CRITICAL_CAP if result.critical_failed else None
    passed = sum(c.weight for c in result.checks if c.passed)
    result.points = scoring.earned(kata.points, passed, total, bool(result.critical_failed))
