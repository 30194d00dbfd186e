"""The pytest plugin that turns graders into structured results; loaded only in the judge's process.

The judge never imports the student's file: the student's code runs in a process of its own
(`kata.grading.spawn`, `kata.student`), and the `student` fixture is a proxy for it
(`kata.toolkit.remote`). In order:
1. configure: the course, the student's process (started by `kata.grading.child` before anything here
   was loaded), the reference solution of the kata (kept out of `sys.modules`, handed to graders only
   through the `reference` fixture), the `session` record;
2. collection: the grader modules are imported; then the student's process is asked to run the
   student's file (its source sent as text); if that fails, the failure is the kata's outcome and no
   check runs;
3. each check: the student's process is seeded as this one is, its printed output gathered; the result
   (status, message, diagnoses, the student's own frames, never grader source) is written as one JSON
   line (`kata.grading.protocol`). Blame goes by side: what the student's code raised, and what its
   process did wrong (died, answered out of turn, ran out of time), is the student's; a grader's failed
   comparison is a failed check.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.util
import json
import os
import platform
import re
import sys
import time
import types
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from kata import scoring
from kata.course import Kata, load_course
from kata.grading import protocol
from kata.grading.failure import CheckFailed, ErrorPattern, Mistake, diagnose_error
from kata.toolkit.remote import Session, StudentError, StudentForbidden, StudentGone

DEFAULT_DTYPES = {"cpu": (torch.float32, torch.float64), "cuda": (torch.float32,)}
DEFAULT_OUTPUT_LIMIT = 4000


class Writer:
    """One JSON record per line to the results descriptor, numbered (`seq`) in the order written."""

    def __init__(self, fd: int):
        self.fd, self.seq = fd, 0

    def write(self, event: str, **fields) -> None:
        line = json.dumps({"event": event, "seq": self.seq, **fields}, default=str) + "\n"
        self.seq += 1
        data = line.encode("utf-8")
        while data:
            data = data[os.write(self.fd, data):]


@dataclass
class _State:
    kata: Kata
    writer: Writer
    session: Session
    source: str
    devices: tuple[str, ...]
    seed: int
    budget: float | None = None
    go: int | None = None
    require_walls: bool = False
    student: object = None
    reference: types.ModuleType | None = None
    started: dict[str, float] = field(default_factory=dict)
    unavailable: set[str] = field(default_factory=set)  # checks only meaningful on a device not here
    cuda_broken: bool = False  # a check hit a CUDA error that leaves the GPU unusable for the rest of the run
    cuda_checks_on_cpu: bool = False  # no GPU here: the CPU also runs the dtypes written for CUDA (`kata verify`)
    settle_early: bool = False  # skip verdict-only checks once a check has failed (`kata verify`'s planted mistakes)
    failed: bool = False  # a check of this run did not pass


_state: _State | None = None
_prepared: dict = {}  # set by kata.grading.child before pytest starts: the session, the writer, the source path


def prepare(**things) -> None:
    """What the judge's process made before pytest: the student's `session`, the results `writer`, `student_path`."""
    _prepared.update(things)


def pytest_addoption(parser):
    group = parser.getgroup("kata", "transformer-katas grading")
    group.addoption("--kata-id", help="the kata being graded")
    group.addoption("--kata-devices", default="all", choices=("cpu", "cuda", "all"),
                    help="cpu, cuda, or all (cpu plus cuda when torch sees a GPU)")
    group.addoption("--kata-cuda-checks-on-cpu", action="store_true",
                    help="where torch sees no GPU, run the checks of CUDA's dtypes (half precision) on the CPU too")
    group.addoption("--kata-settle-early", action="store_true",
                    help="once a check has failed, skip the checks marked verdict_only: for kata verify's planted "
                         "mistakes, whose verdict is then settled and whose diagnoses such a check cannot change")
    group.addoption("--kata-seed", type=int, default=0, help="seed for torch and hypothesis")
    group.addoption("--kata-budget", type=float, default=None, help="seconds the student's process may take")
    group.addoption("--kata-require-walls", action="store_true",
                    help="grading for credit: refuse to run the student's file where its process has neither "
                         "namespaces of its own nor another user (the graders would not be hidden from it)")
    group.addoption("--kata-go-fd", type=int, default=None,
                    help="wait for a byte on this descriptor before running the student's file (kata watch)")


def pytest_configure(config):
    global _state
    config.addinivalue_line("markers", "weight(n): this check counts n times in the kata's points")
    config.addinivalue_line("markers", "critical: the check guards what the kata builds on ordinary inputs: when its "
                                       "run on the CPU in float32 fails, the kata's score is capped (kata.scoring)")
    config.addinivalue_line("markers", "dtypes(cpu=..., cuda=...): dtypes to run per device")
    config.addinivalue_line("markers", "verdict_only: the check passes or fails and names no mistake (no diagnosis, "
                                       "no error pattern)")
    config.addinivalue_line("markers", "structural: the check compares no value with a truth (shapes, dtypes, inputs "
                                       "left unchanged, relations among the student's own outputs), so a constant "
                                       "answer could pass it: it earns points only beside a passing check of values")
    if not config.getoption("kata_id") or "session" not in _prepared:
        return
    course = load_course()
    kata = course.find(config.getoption("kata_id"))
    seed = config.getoption("kata_seed")
    os.environ["KATA_SEED"] = str(seed)
    cuda = torch.cuda.is_available()
    wanted = config.getoption("kata_devices")
    devices = {"cpu": ("cpu",), "cuda": ("cuda",) if cuda else (), "all": ("cpu", "cuda") if cuda else ("cpu",)}
    session: Session = _prepared["session"]
    _state = _State(
        kata=kata, writer=_prepared["writer"], session=session, source="", devices=devices[wanted], seed=seed,
        budget=config.getoption("kata_budget"), go=config.getoption("kata_go_fd"),
        require_walls=config.getoption("kata_require_walls"),
        cuda_checks_on_cpu=config.getoption("kata_cuda_checks_on_cpu") and not cuda,
        settle_early=config.getoption("kata_settle_early"),
    )
    _state.writer.write(
        "session", kata=kata.id, python=platform.python_version(), torch=str(torch.__version__),
        cuda=cuda, cuda_device=torch.cuda.get_device_name(0) if cuda else None,
        devices=list(_state.devices), requested=wanted, available=list(devices["all"]), seed=seed,
        threads=torch.get_num_threads(), memory_mb=_prepared.get("memory_mb"),
        cuda_checks_on_cpu=_state.cuda_checks_on_cpu,
    )
    # The reference is kept out of sys.modules: the graders get it from the `reference` fixture.
    spec = importlib.util.spec_from_file_location(f"kata_reference_{kata.module_name}", kata.solution)
    _state.reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(_state.reference)


def pytest_generate_tests(metafunc):
    if _state is None:
        return
    names = metafunc.fixturenames
    if "device" not in names and "dtype" not in names:
        return
    marker = metafunc.definition.get_closest_marker("dtypes")
    per_device = {**DEFAULT_DTYPES, **(marker.kwargs if marker else {})}
    if _state.cuda_checks_on_cpu:  # CPU half kernels round as CUDA's do: their checks' tolerances are tried
        per_device["cpu"] = (*per_device.get("cpu", ()),
                             *(t for t in per_device.get("cuda", ()) if t not in per_device.get("cpu", ())))
    devices = _state.devices if "device" in names else ("cpu",)
    pairs = [(d, t) for d in devices for t in per_device.get(d, ())]
    if not pairs:
        # Only meaningful on a device this machine lacks (a half-precision forward on CUDA, say).
        _state.unavailable.add(metafunc.definition.nodeid)
        return
    if "device" in names and "dtype" in names:
        metafunc.parametrize(("device", "dtype"), pairs, ids=[f"{d}-{_dtype_name(t)}" for d, t in pairs])
    elif "device" in names:
        metafunc.parametrize("device", devices)
    else:
        dtypes = [t for _, t in pairs]
        metafunc.parametrize("dtype", dtypes, ids=[_dtype_name(t) for t in dtypes])


def _dtype_name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _run_of(item) -> tuple[str | None, str | None]:
    """The device and dtype a check runs on, as its record names them (None: the check takes neither)."""
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec else {}
    return (params.get("device", "cpu" if "dtype" in params else None),
            _dtype_name(params["dtype"]) if "dtype" in params else None)


def _critical(item) -> bool:
    return item.get_closest_marker("critical") is not None and scoring.is_critical_run(*_run_of(item))


def pytest_collection_modifyitems(session, config, items):
    if _state is None:
        return
    if not _state.devices:  # asked for a device this machine lacks: a usage error, nothing runs
        config.hook.pytest_deselected(items=list(items))
        items[:] = []
        return
    unavailable = [item for item in items if item.nodeid in _state.unavailable]
    if unavailable:
        config.hook.pytest_deselected(items=unavailable)
        items[:] = [item for item in items if item not in unavailable]
    # CUDA's checks last: a device-side assert in the student's code leaves CUDA unusable for the rest of the
    # process (even torch.manual_seed raises), and it must not cost the CPU checks their verdicts.
    items.sort(key=_on_cuda)
    known = _known_diagnoses(items)
    _no_local_constants()
    if _state.go is not None:
        # Prepared ahead of time (kata watch): everything is loaded; the student's file is read when the
        # parent says so. No word (the parent went away, or moved on) is the end.
        word = os.read(_state.go, 64)  # the budget, as text
        os.close(_state.go)
        if not word:
            os._exit(0)
        _state.budget = float(word)
    if _state.budget is not None:
        _state.session.deadline = time.monotonic() + _state.budget
    status, record = _load_student()
    record["walls"] = _state.session.process.walls or {}
    weights = [float(m.args[0]) if (m := item.get_closest_marker("weight")) else 1.0 for item in items]
    # Which checks cap the score, planned with the weights before any student code runs (kata.scoring).
    critical = [_check_id(item.nodeid) for item in items if _critical(item)]
    _state.writer.write("import", status=status, checks=len(items), weights=weights, critical=critical,
                        diagnoses=known, **record)
    if status != protocol.IMPORT_OK:
        config.hook.pytest_deselected(items=list(items))
        items[:] = []


def _on_cuda(item) -> bool:
    callspec = getattr(item, "callspec", None)
    return bool(callspec) and callspec.params.get("device") == "cuda"


def _no_local_constants() -> None:
    """Hypothesis mixes into its examples literals it finds by parsing the source of every "local" module
    loaded (the kata package). Mark every module seen: examples then depend on the graders and the seed
    only, and the parsing (a third of a second per check) is saved."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:
        return
    seen = getattr(providers, "_seen_modules", None)
    if isinstance(seen, set) and hasattr(providers, "_sys_modules_len"):
        seen.update(id(m) for m in sys.modules.values())
        providers._sys_modules_len = len(sys.modules)


def _known_diagnoses(items) -> list[str]:
    """Every diagnosis id the collected grader modules can give: the `Mistake`s they define (directly, in
    an `ErrorPattern`, or in a container) and those the toolkit's shared checks they hold declare
    (`kata.toolkit.common`). A diagnosis made inside a check reuses the id of one defined here, so
    `kata verify` can tell which have no planted mistake."""
    found: set[str] = set()

    def walk(value, depth: int) -> None:
        if isinstance(value, Mistake):
            found.add(value.id)
        elif isinstance(value, types.FunctionType) and isinstance(value.__dict__.get("mistakes"), tuple):
            for mistake in value.__dict__["mistakes"]:
                walk(mistake, 0)
        elif isinstance(value, ErrorPattern):
            found.add(value.mistake.id)
        elif depth and isinstance(value, (tuple, list, set, frozenset)):
            for item in value:
                walk(item, depth - 1)
        elif depth and isinstance(value, dict):
            for key, item in value.items():
                walk(key, depth - 1)
                walk(item, depth - 1)

    for module in {id(item.module): item.module for item in items if getattr(item, "module", None)}.values():
        for value in vars(module).values():
            walk(value, 3)
    return sorted(found)


def _load_student() -> tuple[str, dict]:
    """Have the student's process run the student's file; a failure is the kata's outcome."""
    session = _state.session
    try:
        walls = session.ready()
    except StudentGone as gone:
        return _gone_status(gone), {"message": _gone_message(gone), "frames": [], "output": ""}
    if _state.require_walls and not (walls.get("namespaces") or walls.get("user") == "nobody"):
        return protocol.INTERNAL, {"message": "the student's process could not wall itself off here "
                                              f"({walls.get('problem')}): grading for credit needs namespaces of its "
                                              "own, or another user (`kata doctor` says why)", "frames": [],
                                   "output": ""}
    path = Path(session.filename)
    try:
        _state.source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return protocol.IMPORT_ERROR, {"message": f"cannot read {path}: {exc}", "frames": [], "output": ""}
    try:
        _state.student = session.load(_state.source)
    except StudentGone as gone:
        return _gone_status(gone), {"message": _gone_message(gone), "frames": _frames(gone.frames),
                                    "output": session.take_output()}
    except StudentError as exc:
        status = {"SyntaxError": protocol.SYNTAX_ERROR, "ImportError": protocol.IMPORT_ERROR,
                  "ModuleNotFoundError": protocol.IMPORT_ERROR, "ForbiddenBuiltin": protocol.FORBIDDEN,
                  }.get(exc.type_name, protocol.EXCEPTION)
        if _not_implemented(exc, _frames(exc.frames)):
            status = protocol.NOT_IMPLEMENTED
        message = f"{exc.type_name}: {exc.message}" if exc.message else exc.type_name
        if _out_of_memory(exc):
            status, message = protocol.MEMORY, _memory_message(message)
        return status, {"message": message, "frames": _frames(exc.frames), "output": session.take_output()}
    return protocol.IMPORT_OK, {"output": session.take_output()}


@pytest.fixture(scope="session")
def student():
    """The student's module (their `exercise.py`), as a proxy to the process it runs in."""
    return _state.student


@pytest.fixture
def reference():
    """The reference solution's module."""
    return _state.reference


@pytest.fixture(scope="session")
def kata():
    """The kata being graded, from `course.toml`."""
    return _state.kata


@pytest.fixture(autouse=True)
def _kata_seed(request):
    if _state is not None:
        seed = _state.seed * 1_000_003 + zlib.crc32(request.node.nodeid.encode())
        # torch.manual_seed's, without queueing a seed (and formatting the stack) for each accelerator torch
        # knows but this process cannot use: a millisecond or more per check.
        torch.random.default_generator.manual_seed(seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)
        _state.session.seed(seed)


def pytest_runtest_logstart(nodeid, location):
    if _state is not None:
        _state.started[nodeid] = time.perf_counter()
        _state.session.take_output()


def _check_id(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    if _state is None:
        return (yield)
    _state.writer.write("begin", id=_check_id(item.nodeid), title=_title(item))
    if _state.session.gone is not None:
        pytest.skip("not run: the student's process had ended")
    if _state.settle_early and _state.failed and item.get_closest_marker("verdict_only"):
        pytest.skip("not run: an earlier check failed, which settles the verdict, and this check names no mistake")
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if _state is None or call.when == "teardown":
        return report
    if call.when == "setup" and report.passed:
        return report
    status, message, mistakes, frames = _classify(report, call)
    verdict_only = item.get_closest_marker("verdict_only") is not None
    # A broken CUDA says nothing about the line it surfaced in: no error pattern may diagnose it.
    if status == protocol.ERROR and not _breaks_cuda(_raised(call)) and not verdict_only:
        code = frames[-1]["code"] if frames else ""
        mistakes = diagnose_error(getattr(item.module, "ERROR_PATTERNS", ()), message, code)
    if verdict_only and mistakes:  # a grader's bug: verify skips this check where it could have named them
        status, message = protocol.ERROR, (f"grader error: this check is marked verdict_only, yet it named "
                                           f"{', '.join(m.id for m in mistakes)}: tell the course's author")
        mistakes = ()
    if status not in (protocol.PASSED, protocol.SKIPPED):
        _state.failed = True
    device, dtype = _run_of(item)
    weight = item.get_closest_marker("weight")
    _state.writer.write(
        "check",
        id=_check_id(item.nodeid),
        title=_title(item),
        status=status,
        message=message,
        device=device,
        dtype=dtype,
        weight=float(weight.args[0]) if weight else 1.0,
        structural=item.get_closest_marker("structural") is not None,
        diagnoses=[{"id": m.id, "explanation": m.explanation} for m in mistakes],
        frames=frames,
        output=_state.session.take_output(),
        seconds=round(time.perf_counter() - _state.started.get(item.nodeid, time.perf_counter()), 4),
    )
    gone = _state.session.gone
    if gone is not None and not getattr(gone, "reported", False):
        gone.reported = True
        _state.writer.write("gone", kind=gone.kind, message=_gone_message(gone), check=_check_id(item.nodeid),
                            frames=_frames(gone.frames), stack_seen=gone.stack_seen)
        item.session.shouldstop = "the student's process ended"
    return report


def _title(item) -> str:
    doc = (getattr(item.function, "__doc__", None) or "").strip()
    title = doc.splitlines()[0].rstrip(".") if doc else item.function.__name__.replace("_", " ")
    callspec = getattr(item, "callspec", None)
    return f"{title} [{callspec.id}]" if callspec else title


def _classify(report, call) -> tuple[str, str, tuple, list[dict]]:
    if report.passed:
        return protocol.PASSED, "", (), []
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        return protocol.SKIPPED, reason.removeprefix("Skipped: "), (), []
    exc = _raised(call)
    if _state.session.gone is not None:  # whatever the grader made of it, the process is gone
        gone = _state.session.gone
        return _gone_status(gone), _gone_message(gone), (), _frames(gone.frames)
    if isinstance(exc, StudentError):
        frames = _frames(exc.frames)
        if isinstance(exc, StudentForbidden):
            return protocol.FORBIDDEN, exc.message, (), frames
        if _not_implemented(exc, frames):
            where = frames[-1]
            return protocol.NOT_IMPLEMENTED, f"not implemented yet ({where['file']}:{where['line']})", (), frames
        text = _exception_text(exc)
        if _out_of_memory(exc):
            return protocol.MEMORY, _memory_message(text), (), frames
        if _breaks_cuda(exc):
            return protocol.ERROR, _cuda_broken_message(text), (), frames
        return protocol.ERROR, text, (), frames
    if isinstance(exc, CheckFailed):
        return protocol.FAILED, _exception_text(exc, with_type=False), exc.mistakes, []
    if isinstance(exc, AssertionError):
        return protocol.FAILED, _exception_text(exc, with_type=False) or "check failed", (), []
    if _breaks_cuda(exc):
        return protocol.ERROR, _cuda_broken_message(_exception_text(exc)), (), []
    return protocol.ERROR, _exception_text(exc), (), []


def _not_implemented(exc: StudentError, frames: list[dict]) -> bool:
    """The stub's own `raise NotImplementedError()`: raised by a raise statement of the student's file. A
    NotImplementedError that torch raised (`&` of a float mask: "bitwise_and_cpu" not implemented for 'Float')
    is an error of the student's code, whose innermost line of the student's file is then the call into torch."""
    return (isinstance(exc, NotImplementedError) and bool(frames)
            and frames[-1]["line"] in _not_implemented_lines(_state.source))


@functools.cache
def _not_implemented_lines(source: str) -> frozenset[int]:
    """The lines of `source` spanned by a `raise NotImplementedError` statement (with or without a message)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return frozenset()
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(raised, ast.Name) and raised.id == "NotImplementedError":
                lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return frozenset(lines)


def _gone_status(gone: StudentGone) -> str:
    return {"timeout": protocol.TIMEOUT, "memory": protocol.MEMORY}.get(gone.kind, protocol.CRASH)


def _gone_message(gone: StudentGone) -> str:
    during = f" while {gone.during}" if gone.during else ""
    if gone.kind == "timeout":
        return f"your code ran past the kata's time budget{during}"
    return f"your code's process ended{during}: {gone.message}"


# CUDA errors after which the process cannot use the GPU again: every later CUDA call raises the same.
_CUDA_STICKY_ERRORS = ("device-side assert triggered", "an illegal memory access was encountered")


def _raised(call) -> BaseException:
    """What a check raised: the first of a group (hypothesis reports several as a group)."""
    exc = call.excinfo.value
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _breaks_cuda(exc: BaseException) -> bool:
    return isinstance(exc, RuntimeError) and any(error in str(exc) for error in _CUDA_STICKY_ERRORS)


def _cuda_broken_message(detail: str) -> str:
    first = detail.splitlines()[0] if detail else ""
    if _state.cuda_broken:
        return (f"not run: CUDA stopped working in an earlier check of this run ({first}); "
                "see the first CUDA check that failed")
    _state.cuda_broken = True
    return (f"{first}\nA CUDA kernel failed inside your code, most often an index out of range: a token id "
            "not below an embedding's vocabulary size, a gather or index past the end of a dimension. CUDA "
            "reports it late (maybe in a later line than the one at fault) and cannot be used again by this "
            "run, so the CUDA checks after this one fail too. `kata check --device cpu` shows where it happens.")


def _out_of_memory(exc: BaseException) -> bool:
    name = exc.type_name if isinstance(exc, StudentError) else type(exc).__name__
    if name == "MemoryError":
        return True
    text = str(exc) if name in ("RuntimeError", "OutOfMemoryError") else ""
    return "can't allocate memory" in text or "Cannot allocate memory" in text or "out of memory" in text


def _memory_message(detail: str) -> str:
    limit = _prepared.get("memory_mb")
    first = detail.splitlines()[0] if detail else ""
    if limit:
        return (f"used more than {_size(limit)} of memory, the kata's limit ({first}): a tensor far larger than "
                "the inputs, or one kept alive in a loop?")
    return f"ran out of memory ({first})"


def _size(mb: int) -> str:
    return f"{mb / 1024:g} GiB" if mb >= 1024 and mb % 256 == 0 else f"{mb} MiB"


def _exception_text(exc: BaseException, *, with_type: bool = True) -> str:
    text = str(exc)
    if with_type:
        name = exc.type_name if isinstance(exc, StudentError) else type(exc).__name__
        text = f"{name}: {text}" if text else name
    # Hypothesis notes the failing example; the fixtures in it (the modules) say nothing useful.
    notes = [_FIXTURE_ARGUMENT.sub("", n) for n in getattr(exc, "__notes__", ()) if isinstance(n, str)]
    return "\n".join([text, *notes]).strip()


_FIXTURE_ARGUMENT = re.compile(r"^\s*(student|reference|kata)=<[^\n]*>,\n", re.MULTILINE)


def _frames(frames: list[dict]) -> list[dict]:
    """The student's frames as the student's process reported them, in the student's file only, each with
    its line of source read from the judge's own copy."""
    lines = _state.source.splitlines() if _state is not None else []
    filename = _state.session.filename if _state is not None else None
    kept = []
    for frame in frames:
        if frame.get("file") != filename:
            continue
        line = frame.get("line") or 0
        code = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        kept.append({"file": filename, "line": line, "function": str(frame.get("function", "")), "code": code})
    return kept


def pytest_sessionfinish(session, exitstatus):
    if _state is not None:
        _state.writer.write("end", exitstatus=int(exitstatus))
        with contextlib.suppress(Exception):
            _state.session.close()
