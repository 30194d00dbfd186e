"""The pytest plugin that turns graders into structured results; loaded only in the grading child.

Order matters and is deliberate:
1. configure: the course, the reference solution of the kata and the results file are loaded, and
   torch imported, before any of the student's code exists in the process;
2. collection: the grader modules are imported (they capture what they compare against);
3. the student's module is imported, with the forbidden built-ins armed and its output captured; if
   that fails, the failure is the kata's outcome and no check runs;
4. each check runs with output captured; its result (status, message, diagnoses, the student's own
   traceback frames, never grader source) is written as one JSON line.
"""

from __future__ import annotations

import contextlib
import importlib.util
import linecache
import os
import platform
import re
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from kata.course import Kata, load_course
from kata.grading import protocol
from kata.grading.capture import DEFAULT_LIMIT, captured
from kata.grading.compare import CheckFailed
from kata.grading.guard import ForbiddenBuiltin, arm

DEFAULT_DTYPES = {"cpu": (torch.float32, torch.float64), "cuda": (torch.float32,)}
STUDENT_MODULE = "exercise"


@dataclass
class _Session:
    kata: Kata
    student_path: Path
    writer: protocol.ResultWriter
    devices: tuple[str, ...]
    seed: int
    output_limit: int
    reference: object = None
    student: object = None
    student_files: set[str] = field(default_factory=set)
    started: dict[str, float] = field(default_factory=dict)
    unavailable: set[str] = field(default_factory=set)  # checks only meaningful on a device not here


_session: _Session | None = None


def pytest_addoption(parser):
    group = parser.getgroup("kata", "transformer-katas grading")
    group.addoption("--kata-id", help="the kata being graded")
    group.addoption("--kata-student", help="the student's exercise file")
    group.addoption("--kata-results", help="where to write the results, one JSON object per line")
    group.addoption("--kata-devices", default="all", choices=("cpu", "cuda", "all"),
                    help="cpu, cuda, or all (cpu plus cuda when torch sees a GPU)")
    group.addoption("--kata-seed", type=int, default=0, help="seed for torch and hypothesis")
    group.addoption("--kata-output-limit", type=int, default=DEFAULT_LIMIT,
                    help="characters of the student's printed output kept per check")


def pytest_configure(config):
    global _session
    config.addinivalue_line("markers", "weight(n): this check counts n times in the kata's points")
    config.addinivalue_line("markers", "dtypes(cpu=..., cuda=...): dtypes to run per device")
    if not config.getoption("kata_id"):
        return
    course = load_course()
    kata = course.find(config.getoption("kata_id"))
    seed = config.getoption("kata_seed")
    os.environ["KATA_SEED"] = str(seed)
    cuda = torch.cuda.is_available()
    wanted = config.getoption("kata_devices")
    devices = {"cpu": ("cpu",), "cuda": ("cuda",) if cuda else (), "all": ("cpu", "cuda") if cuda else ("cpu",)}
    _session = _Session(
        kata=kata,
        student_path=Path(config.getoption("kata_student")).resolve(),
        writer=protocol.ResultWriter(Path(config.getoption("kata_results"))),
        devices=devices[wanted],
        seed=seed,
        output_limit=config.getoption("kata_output_limit"),
    )
    _session.student_files.add(str(_session.student_path))
    _session.writer.write(
        "session", kata=kata.id, python=platform.python_version(), torch=torch.__version__,
        cuda=cuda, cuda_device=torch.cuda.get_device_name(0) if cuda else None,
        devices=list(_session.devices), seed=seed,
    )
    _session.reference = _load(f"kata_reference_{kata.module_name}", kata.solution)


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def pytest_generate_tests(metafunc):
    if _session is None:
        return
    names = metafunc.fixturenames
    if "device" not in names and "dtype" not in names:
        return
    marker = metafunc.definition.get_closest_marker("dtypes")
    per_device = {**DEFAULT_DTYPES, **(marker.kwargs if marker else {})}
    devices = _session.devices if "device" in names else ("cpu",)
    pairs = [(d, t) for d in devices for t in per_device.get(d, ())]
    if not pairs:
        # Only meaningful on a device this machine lacks (a half-precision forward on CUDA, say).
        _session.unavailable.add(metafunc.definition.nodeid)
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


def pytest_collection_modifyitems(session, config, items):
    if _session is None:
        return
    unavailable = [item for item in items if item.nodeid in _session.unavailable]
    if unavailable:
        config.hook.pytest_deselected(items=unavailable)
        items[:] = [item for item in items if item not in unavailable]
    arm(_session.kata.forbidden, _session.student_files)
    status, record = _import_student()
    _session.writer.write("import", status=status, checks=len(items), **record)
    if status != protocol.IMPORT_OK:
        config.hook.pytest_deselected(items=list(items))
        items[:] = []


def _import_student() -> tuple[str, dict]:
    """Import the student's file; a failure is the kata's outcome."""
    path = _session.student_path
    with captured(_session.output_limit) as output:
        try:
            _session.student = _load(STUDENT_MODULE, path)
        except SyntaxError as exc:
            line = (exc.text or "").rstrip("\n")
            return protocol.SYNTAX_ERROR, {"message": f"{type(exc).__name__}: {exc.msg}", "output": output.text(),
                                           "frames": [{"file": exc.filename or str(path), "line": exc.lineno or 0,
                                                       "function": "", "code": line.strip()}]}
        # Anything the student's module raises (SystemExit included) is reported, never propagated.
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            status = {
                ImportError: protocol.IMPORT_ERROR, ModuleNotFoundError: protocol.IMPORT_ERROR,
                ForbiddenBuiltin: protocol.FORBIDDEN, NotImplementedError: protocol.NOT_IMPLEMENTED,
            }.get(type(exc), protocol.EXCEPTION)
            return status, {"message": _exception_text(exc), "frames": _student_frames(exc.__traceback__),
                            "output": output.text()}
    return protocol.IMPORT_OK, {"output": output.text()}


@pytest.fixture(scope="session")
def student():
    """The student's module (their `exercise.py`)."""
    return _session.student


@pytest.fixture(scope="session")
def reference():
    """The reference solution's module, loaded before any of the student's code."""
    return _session.reference


@pytest.fixture(scope="session")
def kata():
    """The kata being graded, from `course.toml`."""
    return _session.kata


@pytest.fixture(autouse=True)
def _kata_seed(request):
    if _session is not None:
        torch.manual_seed(_session.seed * 1_000_003 + zlib.crc32(request.node.nodeid.encode()))


def pytest_runtest_logstart(nodeid, location):
    if _session is not None:
        _session.started[nodeid] = time.perf_counter()
        _session.writer.write("begin", id=_check_id(nodeid))


def _check_id(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


@contextlib.contextmanager
def _capturing(item):
    with captured(_session.output_limit) as output:
        try:
            yield
        finally:
            item.stash[_OUTPUT] = item.stash.get(_OUTPUT, "") + output.text()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    if _session is None:
        return (yield)
    with _capturing(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    if _session is None:
        return (yield)
    with _capturing(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if _session is None or call.when == "teardown":
        return report
    if call.when == "setup" and report.passed:
        return report
    status, message, mistakes, frames = _classify(report, call)
    if status == protocol.ERROR:
        code = frames[-1]["code"] if frames else ""
        mistakes = tuple(p.mistake for p in getattr(item.module, "ERROR_PATTERNS", ()) if p.matches(message, code))
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec else {}
    weight = item.get_closest_marker("weight")
    _session.writer.write(
        "check",
        id=_check_id(item.nodeid),
        title=_title(item),
        status=status,
        message=message,
        device=params.get("device", "cpu" if "dtype" in params else None),
        dtype=_dtype_name(params["dtype"]) if "dtype" in params else None,
        weight=float(weight.args[0]) if weight else 1.0,
        diagnoses=[{"id": m.id, "explanation": m.explanation} for m in mistakes],
        frames=frames,
        output=item.stash.get(_OUTPUT, ""),
        seconds=round(time.perf_counter() - _session.started.get(item.nodeid, time.perf_counter()), 4),
    )
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
    exc = call.excinfo.value
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:  # hypothesis reports several as a group
        exc = exc.exceptions[0]
    frames = _student_frames(exc.__traceback__)
    if isinstance(exc, ForbiddenBuiltin):
        return protocol.FORBIDDEN, str(exc), (), frames
    if isinstance(exc, CheckFailed):
        return protocol.FAILED, _exception_text(exc, with_type=False), exc.mistakes, frames
    if isinstance(exc, AssertionError):
        return protocol.FAILED, _exception_text(exc, with_type=False) or "check failed", (), frames
    if isinstance(exc, NotImplementedError) and frames:
        where = frames[-1]
        return protocol.NOT_IMPLEMENTED, f"not implemented yet ({where['file']}:{where['line']})", (), frames
    return protocol.ERROR, _exception_text(exc), (), frames


def _exception_text(exc: BaseException, *, with_type: bool = True) -> str:
    text = str(exc)
    if with_type:
        text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    # Hypothesis notes the failing example; the fixtures in it (the modules) say nothing useful.
    notes = [_FIXTURE_ARGUMENT.sub("", n) for n in getattr(exc, "__notes__", ()) if isinstance(n, str)]
    return "\n".join([text, *notes]).strip()


_FIXTURE_ARGUMENT = re.compile(r"^\s*(student|reference|kata)=<[^\n]*>,\n", re.MULTILINE)


def _student_frames(tb) -> list[dict]:
    """The traceback's frames in the student's files only: grader frames are never shown."""
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in _session.student_files:
            frames.append({"file": code.co_filename, "line": tb.tb_lineno, "function": code.co_name,
                           "code": linecache.getline(code.co_filename, tb.tb_lineno).strip()})
        tb = tb.tb_next
    return frames


def pytest_sessionfinish(session, exitstatus):
    if _session is not None:
        _session.writer.write("end", exitstatus=int(exitstatus))


_OUTPUT = pytest.StashKey[str]()
