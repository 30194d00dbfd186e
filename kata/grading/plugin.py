"""The pytest plugin that turns graders into structured results; loaded only in the grading child.

Order matters and is deliberate:
1. configure: the course and the reference solution of the kata are loaded (compiled with markers,
   kept out of `sys.modules` and handed to graders only through the `reference` fixture), and torch
   imported, before any of the student's code exists in the process;
2. collection: the grader modules are imported (they capture what they compare against); then the
   forbidden built-ins are armed, the sandbox is told who is who (`kata.grading.sandbox`), and the
   whole process is sealed;
3. the student's module is imported (compiled with entry markers), with its output captured; if that
   fails, the failure is the kata's outcome and no check runs;
4. each check runs with output captured; its result (status, message, diagnoses, the student's own
   traceback frames, never grader source) goes to the sandbox's hook, which verifies the seal and
   writes it, signed, as one JSON line.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import linecache
import os
import platform
import re
import sys
import sysconfig
import time
import types
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from kata import progress as _progress
from kata.course import Course, Kata, load_course
from kata.grading import guard, protocol, sandbox
from kata.grading.capture import DEFAULT_LIMIT, captured, show_warning
from kata.grading.failure import CheckFailed, ErrorPattern, Mistake
from kata.grading.guard import ForbiddenBuiltin

_audit = sys.audit  # captured: the student's code rebinding sys.audit changes nothing here

DEFAULT_DTYPES = {"cpu": (torch.float32, torch.float64), "cuda": (torch.float32,)}
STUDENT_MODULE = "exercise"


class _Writer:
    """Results go to the sandbox's hook, which verifies the seal, signs and writes them."""

    def write(self, event: str, **fields) -> None:
        _audit(sandbox.RESULT, event, fields)


@dataclass
class _Session:
    kata: Kata
    student_path: Path
    writer: _Writer
    devices: tuple[str, ...]
    seed: int
    output_limit: int
    memory_mb: int | None = None
    course: Course | None = None
    graders_dir: Path | None = None
    student: object = None
    student_files: set[str] = field(default_factory=set)
    started: dict[str, float] = field(default_factory=dict)
    unavailable: set[str] = field(default_factory=set)  # checks only meaningful on a device not here
    cuda_broken: bool = False  # a check hit a CUDA error that leaves the GPU unusable for the rest of the run
    cuda_checks_on_cpu: bool = False  # no GPU here: the CPU also runs the dtypes written for CUDA (`kata verify`)
    settle_early: bool = False  # skip verdict-only checks once a check has failed (`kata verify`'s planted mistakes)
    failed: bool = False  # a check of this run did not pass


_session: _Session | None = None


def pytest_addoption(parser):
    group = parser.getgroup("kata", "transformer-katas grading")
    group.addoption("--kata-id", help="the kata being graded")
    group.addoption("--kata-student", help="the student's exercise file")
    group.addoption("--kata-results", help="where to write the results, one JSON object per line")
    group.addoption("--kata-devices", default="all", choices=("cpu", "cuda", "all"),
                    help="cpu, cuda, or all (cpu plus cuda when torch sees a GPU)")
    group.addoption("--kata-cuda-checks-on-cpu", action="store_true",
                    help="where torch sees no GPU, run the checks of CUDA's dtypes (half precision) on the CPU too")
    group.addoption("--kata-settle-early", action="store_true",
                    help="once a check has failed, skip the checks marked verdict_only: for kata verify's planted "
                         "mistakes, whose verdict is then settled and whose diagnoses such a check cannot change")
    group.addoption("--kata-seed", type=int, default=0, help="seed for torch and hypothesis")
    group.addoption("--kata-output-limit", type=int, default=DEFAULT_LIMIT,
                    help="characters of the student's printed output kept per check")
    group.addoption("--kata-memory-mb", type=int, default=None,
                    help="the memory limit the child runs under (named in the message when it is hit)")
    group.addoption("--kata-go-fd", type=int, default=None,
                    help="wait for a byte on this descriptor before importing the student's file (kata watch)")


def pytest_configure(config):
    global _session
    config.addinivalue_line("markers", "weight(n): this check counts n times in the kata's points")
    config.addinivalue_line("markers", "dtypes(cpu=..., cuda=...): dtypes to run per device")
    config.addinivalue_line("markers", "verdict_only: the check passes or fails and names no mistake (no diagnosis, "
                                       "no error pattern)")
    if not config.getoption("kata_id"):
        return
    if not sandbox.installed() and not sandbox.install_prepared():
        # Run by hand (`pytest --kata-id=...`), not by kata.grading.child: unsigned results to the file.
        results = config.getoption("kata_results")
        fd = os.open(results, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        sandbox.install(key=None, fd=fd)
    warnings.showwarning = show_warning  # before the seal: warnings are shown as the student's, or not at all
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
        writer=_Writer(),
        devices=devices[wanted],
        seed=seed,
        output_limit=config.getoption("kata_output_limit"),
        memory_mb=config.getoption("kata_memory_mb"),
        course=course,
        graders_dir=Path(str(config.rootpath)).resolve(),
        cuda_checks_on_cpu=config.getoption("kata_cuda_checks_on_cpu") and not cuda,
        settle_early=config.getoption("kata_settle_early"),
    )
    _session.student_files.add(str(_session.student_path))
    _session.writer.write(
        "session", kata=kata.id, python=platform.python_version(), torch=str(torch.__version__),
        cuda=cuda, cuda_device=torch.cuda.get_device_name(0) if cuda else None,
        devices=list(_session.devices), requested=wanted, available=list(devices["all"]), seed=seed,
        threads=torch.get_num_threads(),
        memory_mb=_session.memory_mb, cuda_checks_on_cpu=_session.cuda_checks_on_cpu,
    )
    # The reference is compiled with markers and kept out of sys.modules: the graders get it from the
    # `reference` fixture; the student's code cannot import it, find it, or run it unnoticed.
    reference = sandbox.load_module(f"kata_reference_{kata.module_name}", kata.solution, reference=True,
                                    register=False)
    codes, classes = sandbox.protect_reference_classes(reference)
    _audit(sandbox.STORE_REFERENCE, reference, codes, classes)


def pytest_generate_tests(metafunc):
    if _session is None:
        return
    names = metafunc.fixturenames
    if "device" not in names and "dtype" not in names:
        return
    marker = metafunc.definition.get_closest_marker("dtypes")
    per_device = {**DEFAULT_DTYPES, **(marker.kwargs if marker else {})}
    if _session.cuda_checks_on_cpu:  # CPU half kernels round as CUDA's do: their checks' tolerances are tried
        per_device["cpu"] = (*per_device.get("cpu", ()),
                             *(t for t in per_device.get("cuda", ()) if t not in per_device.get("cpu", ())))
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
    if not _session.devices:  # asked for a device this machine lacks: a usage error, nothing runs
        config.hook.pytest_deselected(items=list(items))
        items[:] = []
        return
    unavailable = [item for item in items if item.nodeid in _session.unavailable]
    if unavailable:
        config.hook.pytest_deselected(items=unavailable)
        items[:] = [item for item in items if item not in unavailable]
    # CUDA's checks last: a device-side assert in the student's code leaves CUDA unusable for the rest of the
    # process (even torch.manual_seed raises), and it must not cost the CPU checks their verdicts.
    items.sort(key=_on_cuda)
    known = _known_diagnoses(items)
    _protect(items)
    go = config.getoption("kata_go_fd")
    if go is not None:
        # Prepared ahead of time (kata watch): everything is loaded and sealed; the student's file is
        # read when the parent says so. No word (the parent went away, or moved on) is the end.
        word = os.read(go, 1)
        os.close(go)
        if not word:
            os._exit(0)
    _list_import_folders()
    status, record = _import_student()
    if _session.student is not None:
        _no_local_constants(_session.student)
    _session.writer.write("import", status=status, checks=len(items), diagnoses=known, **record)
    if status != protocol.IMPORT_OK:
        config.hook.pytest_deselected(items=list(items))
        items[:] = []


def _list_import_folders() -> None:
    """Have the import system and importlib.metadata list every folder on sys.path now, while no student code
    runs. Each lists a folder once, the first time it looks there (and again if it changes), and the graders'
    folder is among them (pytest put it there): a listing of it is refused while the student's code runs, so
    their lazy import of a library module (`np.testing`, which reads numpy's metadata) would look like a look
    at the graders if it came first."""
    nobody = "kata-lists-the-import-folders"  # a name no module or distribution has: only the listings happen
    importlib.util.find_spec(nobody)
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        importlib.metadata.distribution(nobody)


def _on_cuda(item) -> bool:
    callspec = getattr(item, "callspec", None)
    return bool(callspec) and callspec.params.get("device") == "cuda"


def _protect(items) -> None:
    """Arm the forbidden built-ins, tell the sandbox who is who, and seal the process."""
    kata, course = _session.kata, _session.course
    root = course.root
    later = course.katas[course.index(kata):]
    graders_dir = str(root / "graders") + os.sep
    running = str(_session.graders_dir) + os.sep  # where these graders are: the kata's, or a notebook's
    solutions_dir = str(root / "solutions") + os.sep
    exercises_dir = str(root / "exercises") + os.sep
    paths = sysconfig.get_paths()
    library = tuple(dict.fromkeys(os.path.realpath(paths[k]) + os.sep
                                  for k in ("stdlib", "platstdlib", "purelib", "platlib")))
    kata_dir = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep
    trusted = (*library, kata_dir, graders_dir, solutions_dir, running)
    reference_files = [str(kata.solution), os.path.realpath(kata.solution)]
    guard.configure(_session.student_files, graders=(graders_dir, running), reference_files=reference_files,
                    trusted=trusted)
    guard.arm(kata.forbidden)
    mode = guard.forbidden_mode(kata.forbidden)
    hidden_dirs = [root / "graders", *(root / "graders" / k.dirname for k in course.katas),
                   *(root / "solutions" / k.dirname for k in later), _session.graders_dir]
    hidden_files = [p for d in hidden_dirs if d.is_dir() for p in d.rglob("*") if p.is_file()]
    progress_file = _progress.progress_path(root)
    _audit(sandbox.CONFIGURE, {
        "student_files": sorted(_session.student_files),
        "reference_files": reference_files,
        "trusted": trusted,
        "untrusted": (exercises_dir,),
        "library": tuple(dict.fromkeys((os.path.dirname(torch.__file__) + os.sep, *library))),
        "grader_dirs": (graders_dir, running),
        "protected_files": [str(p) for p in hidden_files],
        "protected_dirs": [str(d) for d in hidden_dirs],
        "protected_prefixes": (graders_dir, running, *(str(root / "solutions" / k.dirname) + os.sep for k in later)),
        "progress_files": (str(progress_file), str(root / _progress.FILE_NAME)),
        "writable_blocked": (*library, kata_dir, graders_dir, solutions_dir, running),
        "mode": (mode, torch._C._push_on_torch_function_stack, torch._C._pop_torch_function_stack,
                 torch._C._len_torch_function_stack) if mode is not None else None,
        "get_default_dtype": torch.get_default_dtype,
    })
    _trap_discarded_examples()
    _no_local_constants()
    _unlink_config()
    graders = sorted({item.module.__name__ for item in items if getattr(item, "module", None) is not None})
    _audit(sandbox.SEAL, graders, [])


def _unlink_config() -> None:
    """Module globals through which pytest's Config (and from it the plugin manager, the session, every
    hook implementation) could be reached by the student's code: cut once collection is done."""
    try:
        from _pytest.mark.structures import MARK_GEN
    except ImportError:
        return
    if getattr(MARK_GEN, "_config", None) is not None:
        MARK_GEN._config = None  # used to validate marker names, while the graders are imported


def _no_local_constants(*modules) -> None:
    """Hypothesis mixes into its examples literals it finds by parsing the source of every "local"
    module loaded (the kata package, the student's file). Mark every module seen: examples then depend
    on the graders and the seed only, never on what the student's file contains, and the parsing
    (a third of a second per check) is saved."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:
        return
    seen = getattr(providers, "_seen_modules", None)
    if isinstance(seen, set) and hasattr(providers, "_sys_modules_len"):
        seen.update(id(m) for m in [*sys.modules.values(), *modules])
        providers._sys_modules_len = len(sys.modules)


def _trap_discarded_examples() -> None:
    """`hypothesis.assume(False)` (or `reject()`, or raising UnsatisfiedAssumption) from the student's
    code would make a property check skip the inputs it fails on: that is tampering."""
    try:
        from hypothesis.errors import UnsatisfiedAssumption
    except ImportError:
        return
    original = UnsatisfiedAssumption.__init__

    def __init__(self, *args, **kwargs):
        where = guard.offender(sys._getframe(1))
        if where is not None:
            _audit(sandbox.TAMPER, "your code called hypothesis.assume() or reject() to discard the graders' inputs")
        original(self, *args, **kwargs)

    UnsatisfiedAssumption.__init__ = __init__


def _known_diagnoses(items) -> list[str]:
    """Every diagnosis id the collected grader modules can give: the `Mistake`s they define (directly, in
    an `ErrorPattern`, or in a container) and those the toolkit's shared checks they hold declare
    (`kata.toolkit.common`), read before the student's code exists in the process. A diagnosis made
    inside a check reuses the id of one defined here, so `kata verify` can tell which have no planted
    mistake."""
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


def _import_student() -> tuple[str, dict]:
    """Import the student's file; a failure is the kata's outcome."""
    path = _session.student_path
    with captured(_session.output_limit) as output:
        try:
            _audit(sandbox.STUDENT, "enter")
            try:
                _session.student = sandbox.load_module(STUDENT_MODULE, path)
            finally:
                _audit(sandbox.STUDENT, "leave")
            _audit(sandbox.STUDENT, "module", _session.student)
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
            message = _exception_text(exc)
            if _out_of_memory(exc):
                status, message = protocol.MEMORY, _memory_message(message)
            return status, {"message": message, "frames": _student_frames(exc.__traceback__),
                            "output": output.text()}
    return protocol.IMPORT_OK, {"output": output.text()}


@pytest.fixture(scope="session")
def student():
    """The student's module (their `exercise.py`)."""
    return _session.student


@pytest.fixture
def reference():
    """The reference solution's module, loaded before any of the student's code (from the sandbox,
    which holds it out of the student's reach)."""
    box: list = []
    _audit(sandbox.FETCH_REFERENCE, box)
    return box[0]


@pytest.fixture(scope="session")
def kata():
    """The kata being graded, from `course.toml`."""
    return _session.kata


@pytest.fixture(autouse=True)
def _kata_seed(request):
    if _session is not None:
        seed = _session.seed * 1_000_003 + zlib.crc32(request.node.nodeid.encode())
        # torch.manual_seed's, without queueing a seed (and formatting the stack) for each accelerator torch
        # knows but this process cannot use: a millisecond or more per check.
        torch.random.default_generator.manual_seed(seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)


def pytest_runtest_logstart(nodeid, location):
    if _session is not None:
        _session.started[nodeid] = time.perf_counter()


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
    _session.writer.write("begin", id=_check_id(item.nodeid), title=_title(item))
    if _session.settle_early and _session.failed and item.get_closest_marker("verdict_only"):
        pytest.skip("not run: an earlier check failed, which settles the verdict, and this check names no mistake")
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
    verdict_only = item.get_closest_marker("verdict_only") is not None
    # A broken CUDA says nothing about the line it surfaced in: no error pattern may diagnose it.
    if status == protocol.ERROR and not _breaks_cuda(_raised(call)) and not verdict_only:
        code = frames[-1]["code"] if frames else ""
        mistakes = tuple(p.mistake for p in getattr(item.module, "ERROR_PATTERNS", ()) if p.matches(message, code))
    if verdict_only and mistakes:  # a grader's bug: verify skips this check where it could have named them
        status, message = protocol.ERROR, (f"grader error: this check is marked verdict_only, yet it named "
                                           f"{', '.join(m.id for m in mistakes)}: tell the course's author")
        mistakes = ()
    if status not in (protocol.PASSED, protocol.SKIPPED):
        _session.failed = True
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
    exc = _raised(call)
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
    if isinstance(exc, PermissionError) and str(exc).startswith("kata: "):  # refused by the sandbox
        reported = "(this attempt is reported)" in str(exc)
        return (protocol.TAMPERED if reported else protocol.ERROR), str(exc), (), frames
    if _out_of_memory(exc):
        return protocol.MEMORY, _memory_message(_exception_text(exc)), (), frames
    if _breaks_cuda(exc):
        return protocol.ERROR, _cuda_broken_message(_exception_text(exc)), (), frames
    return protocol.ERROR, _exception_text(exc), (), frames


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
    if _session.cuda_broken:
        return (f"not run: CUDA stopped working in an earlier check of this run ({first}); "
                "see the first CUDA check that failed")
    _session.cuda_broken = True
    return (f"{first}\nA CUDA kernel failed inside your code, most often an index out of range: a token id "
            "not below an embedding's vocabulary size, a gather or index past the end of a dimension. CUDA "
            "reports it late (maybe in a later line than the one at fault) and cannot be used again by this "
            "run, so the CUDA checks after this one fail too. `kata check --device cpu` shows where it happens.")


def _out_of_memory(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    text = str(exc) if isinstance(exc, RuntimeError) else ""
    return "can't allocate memory" in text or "Cannot allocate memory" in text or "out of memory" in text


def _memory_message(detail: str) -> str:
    limit = _session.memory_mb if _session is not None else None
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
