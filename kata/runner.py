"""The parent side of grading: run a kata's graders in a child process and name the outcome.

The `kata` process never imports the student's code (nor torch): it parses the file itself (a syntax
error costs milliseconds), reads it for forbidden built-ins, then starts `kata.grading.child` under the
kata's time budget and reads the structured results it writes. Whatever happens to the child
(a timeout, a signal, `os._exit`) becomes a named outcome here.
"""

from __future__ import annotations

import ast
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kata.course import Course, Kata
from kata.grading import protocol
from kata.grading.scan import scan

# Kata outcomes.
PASSED = "passed"
FAILED = "failed"
NOT_IMPLEMENTED = "not-implemented"
SYNTAX_ERROR = protocol.SYNTAX_ERROR
IMPORT_ERROR = protocol.IMPORT_ERROR
EXCEPTION = protocol.EXCEPTION
FORBIDDEN = protocol.FORBIDDEN
TIMEOUT = "timeout"
CRASH = "crash"
INTERNAL_ERROR = "internal-error"

# Exit codes of `kata check` (documented in the README).
EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_TIMEOUT = 3
EXIT_CRASH = 4
EXIT_INTERNAL = 5
EXIT_INTERRUPTED = 130

_EXIT_CODES = {PASSED: EXIT_PASSED, TIMEOUT: EXIT_TIMEOUT, CRASH: EXIT_CRASH, INTERNAL_ERROR: EXIT_INTERNAL}
LOG_TAIL = 4000


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
    torch: str | None = None
    seed: int = 0
    log: str = ""  # the tail of the child's own stdout/stderr: for course authors, never grader source

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


def grading_env(course: Course) -> dict[str, str]:
    """The child's environment: the course located, bytecode kept out of the student's folders, and
    torch's thread pool sized so that a check does not freeze the laptop."""
    env = dict(os.environ)
    env["KATA_COURSE"] = str(course.root)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    threads = str(max(1, (os.cpu_count() or 2) // 2))
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(name, threads)
    return env


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


def run_kata(course: Course, kata: Kata, student: Path | None = None, *, devices: str = "all",
             seed: int = 0, timeout: float | None = None) -> KataResult:
    """Grade `student` (the kata's exercise by default) and return its structured result."""
    path = (student or kata.exercise).resolve()
    started = time.perf_counter()
    early = precheck(kata, path)
    if early is not None:
        early.seconds = time.perf_counter() - started
        return early
    budget = kata.time_budget_s if timeout is None else timeout
    with tempfile.TemporaryDirectory(prefix="kata-") as tmp:
        results, log = Path(tmp) / "results.jsonl", Path(tmp) / "child.log"
        command = [sys.executable, "-m", "kata.grading.child", kata.id, str(path), str(results),
                   f"--kata-devices={devices}", f"--kata-seed={seed}"]
        with open(log, "wb") as log_file:
            child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                                     env=grading_env(course), cwd=course.root, start_new_session=True)
            timed_out = False
            try:
                child.wait(timeout=budget)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                # Also on Ctrl-C: the child's whole process group goes, then the interrupt goes on.
                _kill_group(child)
        result = _interpret(kata, path, protocol.read_events(results), child.returncode, timed_out, budget,
                            _tail(log))
    result.seconds = time.perf_counter() - started
    return result


def _kill_group(child: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def _tail(path: Path) -> str:
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - LOG_TAIL))
        return f.read().decode("utf-8", errors="replace")


def _frames(records: list[dict]) -> list[Frame]:
    return [Frame(**r) for r in records]


def _interpret(kata: Kata, path: Path, events: list[dict], returncode: int, timed_out: bool,
               budget: float, log: str) -> KataResult:
    result = KataResult(kata.id, str(path), INTERNAL_ERROR, log=log)
    session = next((e for e in events if e["event"] == "session"), {})
    result.devices = session.get("devices", [])
    result.cuda_available = session.get("cuda")
    result.cuda_device = session.get("cuda_device")
    result.torch = session.get("torch")
    result.seed = session.get("seed", 0)

    begun: list[str] = []
    for event in events:
        if event["event"] == "import":
            result.output = event.get("output", "")
            if event["status"] != protocol.IMPORT_OK:
                result.outcome = event["status"]
                result.message = event.get("message", "")
                result.frames = _frames(event.get("frames", []))
                return result
        elif event["event"] == "begin":
            begun.append(event["id"])
        elif event["event"] == "check":
            fields = {k: v for k, v in event.items() if k != "event"}
            fields["frames"] = _frames(fields.get("frames", []))
            result.checks.append(Check(**fields))
    _score(kata, result)
    finished = {c.id for c in result.checks}
    running = next((cid for cid in reversed(begun) if cid not in finished), None)
    during = f" (during check {running})" if running else ""

    if timed_out:
        result.outcome = TIMEOUT
        result.message = f"ran longer than {budget:g} s, the kata's time budget{during}: an infinite loop?"
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
    elif not session or not result.checks:
        result.outcome = INTERNAL_ERROR
        result.message = f"the graders of kata {kata.id} did not run (pytest exit code {returncode})"
    else:
        statuses = {c.status for c in result.checks}
        if statuses == {protocol.PASSED}:
            result.outcome = PASSED
        elif protocol.FORBIDDEN in statuses:
            result.outcome = FORBIDDEN
        elif statuses == {protocol.NOT_IMPLEMENTED}:
            result.outcome = NOT_IMPLEMENTED
        else:
            result.outcome = FAILED
        failing = sum(not c.passed for c in result.checks)
        result.message = (f"all {len(result.checks)} checks passed" if result.outcome == PASSED
                          else f"{failing} of {len(result.checks)} checks did not pass")
    return result


def _score(kata: Kata, result: KataResult) -> None:
    """Each check is worth the kata's points times its weight over the total weight."""
    total = sum(c.weight for c in result.checks)
    for check in result.checks:
        check.points = kata.points * check.weight / total if total else 0.0
    result.max_points = kata.points
    result.points = sum(c.points for c in result.checks if c.passed)
