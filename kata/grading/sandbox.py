"""Tamper resistance inside the grading child: the checks must be the checks.

The student's code runs in the same process as the graders, so nothing the graders rely on can be
trusted to stay as it was. The defence is one audit hook (PEP 578): installed by the grading plugin
before any grader or student code is imported, it can be neither removed nor inspected from Python,
and everything it needs lives in its closure, out of reach of the student's code:

- **Signed results.** The hook is the only writer of the results channel (a pipe from the parent).
  Each record carries a sequence number and an HMAC-SHA256 under a per-run key that the parent sent
  through another pipe, read and closed before anything else ran (the hook itself is installed once
  torch and pytest are imported, long before any of the student's code exists). A record written by
  anyone else, or one missing, is rejected by the parent. The plugin hands results to the hook with
  `sys.audit("kata.result", ...)`; the hook serialises them itself, with C functions it captured.
- **The seal.** Before the student's module is imported, the hook records the identity of every
  function, class and module bound in every loaded module and class (torch, pytest, pluggy,
  hypothesis, the graders, kata and its toolkit, builtins, ...; kata's and the graders' data too). A
  core part of it (what graders and the plugin use to reach a verdict) is verified whenever grading
  code calls into the student's code, whenever the student's code returns to it, and before each
  result is written; all of it when the session ends. Any difference is tampering: the parent then
  reports the kata as tampered, whatever the checks said.
- **Entry markers.** The student's module is compiled with a marker at the entry and exit of every
  function and lambda (`(lambda __kata__='__kata_enter__': None).__code__`, which raises an audit
  event no name binding can intercept). So a replacement the student's code installs (in torch, in a
  grader, in pytest) is caught the moment anything calls it, even one that would restore the
  original after its first use. The current kata's reference solution carries markers too: it runs
  for the graders, never on the student's behalf.
- **A policy for what code may do while the student's code is on the stack** (or code the student
  made: any code not loaded from the Python installation, the kata package, the graders or the
  solutions): no stack frames (`sys._getframe`, `inspect.stack()`, `traceback.tb_frame`), no object
  search (`gc.get_objects`), no `ctypes`, no new code objects or `exec` of its own, no reading or
  listing of the graders, of this kata's (or a later kata's) reference solution, of the progress
  file, of `/proc`; no writing of Python files or into the installation; no processes (also through
  `_posixsubprocess.fork_exec`, which raises no audit event: it is replaced by one that asks the hook),
  no signals to other processes, no resource limits raised; no sockets; no memory mappings, /dev/shm
  files, `_posixshmem` or `os.memfd_create` (shared memory, which the memory limit does not count). Attempts on hidden
  files, on other processes and on the results are reported as tampering; the others just fail with a
  `TamperError`.

In-process grading cannot be a proof against an adversary with unlimited patience (Python has no
private memory); the point is that every known route to a forged pass is closed or detected, and
that the remaining ones need deliberate work an instructor would recognise on reading the code.
"""

from __future__ import annotations

import ast
import os
import sys
import sysconfig
import types

# Tokens of the entry/exit markers compiled into the student's code and the reference solution.
ENTER = "__kata_enter__"
LEAVE = "__kata_leave__"
REFERENCE = "__kata_reference__"

# Events the hook answers to. They are accepted from trusted code only (the kata package), and never
# while the student's code is on the stack.
CONFIGURE = "kata.configure"
SEAL = "kata.seal"
RESULT = "kata.result"
STUDENT = "kata.student"
TAMPER = "kata.tamper"
STORE_REFERENCE = "kata.reference"
FETCH_REFERENCE = "kata.fetch-reference"
VERIFY = "kata.verify"
TAINT = "kata.taint"
SUBSTITUTE = "kata.substitute"
THREAD = "kata.thread"
FORK_EXEC = "kata.fork-exec"

_installed = False


class TamperError(PermissionError):
    """An operation the graders do not allow while the student's code runs.

    `reported` when the attempt was also reported as tampering (the kata's checks then do not count);
    otherwise the operation just failed, like any other error in the student's code."""

    def __init__(self, message: str, reported: bool = False):
        super().__init__(message)
        self.reported = reported


def installed() -> bool:
    return _installed


# --------------------------------------------------------------------------------------------------
# Markers


def _marker(token: str, node: ast.AST) -> ast.expr:
    lam = ast.Lambda(
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg="__kata__")], vararg=None, kwonlyargs=[],
                           kw_defaults=[], kwarg=None, defaults=[ast.Constant(token)]),
        body=ast.Constant(None))
    expr = ast.Attribute(value=lam, attr="__code__", ctx=ast.Load())
    for sub in ast.walk(expr):
        ast.copy_location(sub, node)
    return expr


class _Instrument(ast.NodeTransformer):
    def __init__(self, enter: str, leave: str | None):
        self.enter, self.leave = enter, leave

    def _function(self, node):
        self.generic_visit(node)
        body = list(node.body)
        head = []
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            head.append(body.pop(0))
        first = body[0] if body else node
        enter = ast.copy_location(ast.Expr(_marker(self.enter, first)), first)
        if self.leave is None or not body:
            node.body = [*head, enter, *body] if body else [*head, enter]
            return node
        last = body[-1]
        leave = ast.Expr(_marker(self.leave, last))
        ast.copy_location(leave, last)
        guarded = ast.Try(body=body, handlers=[], orelse=[], finalbody=[leave])
        ast.copy_location(guarded, first)
        node.body = [*head, enter, guarded]
        return node

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Lambda(self, node):
        self.generic_visit(node)
        pair = ast.Tuple(elts=[_marker(self.enter, node), node.body], ctx=ast.Load())
        node.body = ast.Subscript(value=ast.copy_location(pair, node), slice=ast.Constant(1), ctx=ast.Load())
        ast.copy_location(node.body, node)
        ast.copy_location(node.body.slice, node)
        return node


def instrument(source: str, filename: str, *, reference: bool = False) -> types.CodeType:
    """Compile a module with entry (and exit) markers in every function and lambda.

    Line numbers are kept, so tracebacks and `path:line` links point at the student's own lines.
    """
    tree = ast.parse(source, filename=filename)
    tree = _Instrument(REFERENCE, None).visit(tree) if reference else _Instrument(ENTER, LEAVE).visit(tree)
    ast.fix_missing_locations(tree)
    return compile(tree, filename, "exec", dont_inherit=True)


def load_module(name: str, path, *, reference: bool = False, register: bool = True) -> types.ModuleType:
    """Load a module from `path` with markers compiled in (see `instrument`)."""
    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:
        source = f.read()
    code = instrument(source, path, reference=reference)
    module = types.ModuleType(name) if reference else StudentModule(name)
    module.__file__ = path
    module.__builtins__ = __builtins__
    if not reference:
        sys.audit(STUDENT, "globals", module.__dict__)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    if not register:
        sys.modules.pop(name, None)
    return module


# --------------------------------------------------------------------------------------------------
# The hook

_STDLIB_DIRS = tuple(dict.fromkeys(
    os.path.realpath(sysconfig.get_paths()[key]) + os.sep for key in ("stdlib", "platstdlib")))
_SITE_DIRS = tuple(dict.fromkeys(
    os.path.realpath(sysconfig.get_paths()[key]) + os.sep for key in ("purelib", "platlib")))
_KATA_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep

# Standard-library modules that look at their caller's frame only to name the caller's module (a
# namedtuple, a TypedDict, an Enum made by a function call) or to place a warning or a log record:
# they may do so on behalf of the student's code.
_FRAME_HELPERS = ("collections" + os.sep + "__init__.py", os.sep + "typing.py", os.sep + "enum.py",
                  os.sep + "warnings.py", "logging" + os.sep + "__init__.py", os.sep + "dataclasses.py",
                  os.sep + "abc.py", os.sep + "typing_extensions.py")
# The standard library's stack formatting and source-line cache: libraries (torch records where a CUDA
# seed was queued) use them for text about their own callers. The student's code may not: the text
# names the graders' frames. And linecache never gets a hidden file's lines; for a library, that is an
# unreadable file like any other (it gets no lines), for the student's code, tampering.
_STACK_TEXT = os.sep + "traceback.py"
_LINE_CACHE = os.sep + "linecache.py"
# What `object.__setattr__` reports: a function's code and defaults, a class's special attributes,
# an object's class. The standard library sets them on what it is making (a named tuple's `__new__`
# gets its defaults), also on the student's behalf (a NamedTuple in their file, one in a torch module
# imported the first time a tensor is printed): that is the target's maker at work, unless the target
# is one of the graders' (sealed).
_SETATTR_TARGETS = (types.FunctionType, type, types.ModuleType)
# torch.compile (dynamo and inductor generate and compile code): not while the student's code is graded.
_COMPILERS = (os.sep + "torch" + os.sep + "_dynamo" + os.sep, os.sep + "torch" + os.sep + "_inductor" + os.sep)
# Standard-library code generators that compile fixed templates (named tuples, dataclasses) and
# the import system: they may compile and run code on behalf of the student's code.
_CODE_HELPERS = ("collections" + os.sep + "__init__.py", os.sep + "dataclasses.py", os.sep + "typing.py",
                 os.sep + "enum.py", "<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")

_INTROSPECTION = frozenset({
    "sys._getframe", "sys._current_frames", "sys._getframemodulename", "sys.settrace", "sys.setprofile",
    "sys.addaudithook", "sys.monitoring.register_callback", "sys.remote_exec",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents",
    "code.__new__", "function.__new__", "marshal.loads", "marshal.load",
    "object.__setattr__", "object.__delattr__",
})
_PROCESSES = frozenset({
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.startfile",
    "subprocess.Popen", "pty.spawn", "os.kill", "os.killpg", "signal.pthread_kill", "resource.setrlimit",
    "resource.prlimit", "os.setuid", "os.setgid", "os.chroot", "os.chdir", "os.fchdir",
})
_PATH_WRITES = frozenset({
    "os.remove", "os.rename", "os.rmdir", "os.truncate", "os.chmod", "os.chown", "os.link", "os.symlink",
    "os.utime", "os.mkdir", "shutil.rmtree", "shutil.move", "shutil.copyfile", "shutil.copytree",
    "os.removexattr", "os.setxattr",
})
_LISTINGS = frozenset({"os.listdir", "os.scandir", "glob.glob", "glob.glob/2", "pathlib.Path.glob",
                       "pathlib.Path.rglob", "os.fwalk"})
# The audited reads that hand out a frame or a code object (a frame's f_back, f_globals, f_locals are
# not audited: holding no frame, the student's code cannot reach them).
_FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "gi_code", "cr_code", "ag_code",
                               "__code__"})
_SEALED_ATTRIBUTE_EVENTS = frozenset({"object.__getattr__"})
# Sockets (every socket module entry point raises one of these) and memory mappings (an anonymous or
# /dev/shm mapping is shared memory, which the memory limit does not count).
_CHANNELS = frozenset({"socket.__new__", "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg",
                       "socket.getaddrinfo", "socket.gethostbyname", "socket.socketpair", "mmap.__new__"})
# Native modules whose entry points raise no audit event: the sandbox wraps the ones loaded, and a fresh
# import of them (after deleting them from sys.modules) is refused while the student's code runs.
_UNAUDITED_MODULES = frozenset({"_posixsubprocess", "_posixshmem", "posix"})
_SHARED_MEMORY_DIRS = ("/dev/shm/", "/run/shm/")
_WATCHED = (_INTROSPECTION | _PROCESSES | _PATH_WRITES | _LISTINGS | _SEALED_ATTRIBUTE_EVENTS | _CHANNELS
            | frozenset({"open", "os.open", "compile", "exec", "import"}))
_OWN = frozenset({CONFIGURE, SEAL, RESULT, STUDENT, TAMPER, STORE_REFERENCE, FETCH_REFERENCE, VERIFY, TAINT,
                  SUBSTITUTE, THREAD, FORK_EXEC})
# Names that appear in modules and classes as code runs: warning registries, hypothesis's traceback
# markers, copyreg's slot-name cache, abc's caches.
_BENIGN_ADDITIONS = frozenset({"__warningregistry__", "__hypothesistracebackhide__", "__tracebackhide__",
                               "__slotnames__", "_abc_impl", "__abstractmethods__", "__annotations__",
                               "__orig_bases__", "__parameters__"})
_CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".pth", ".so", ".pyd", ".dylib")

# Modules (and classes defined in them) whose every binding is sealed, data included; elsewhere only
# functions, classes, modules and descriptors are, since data (caches, counters) changes as code runs.
_STRICT_PREFIXES = ("kata.", "hypothesis._settings")
_STRICT_NAMES = frozenset({"kata", "builtins", "hypothesis._settings"})
# What graders use most: verified whole before every result is written. At every call into the
# student's code, what the calling code can look names up in is verified (its module, the modules and
# classes its names and local variables refer to); everything is verified when the session ends.
_CORE_MODULES = ("builtins", "torch", "torch.nn", "torch.nn.functional", "torch.testing", "torch.special",
                 "torch.linalg")


_prepared: tuple | None = None


def prepare(*, key: bytes | None, fd: int) -> None:
    """Hold the key and the results descriptor until `install_prepared` (the plugin's configure, once
    torch and pytest are imported: their imports need no watching, and go faster unwatched)."""
    global _prepared
    _prepared = (key, fd)


def install_prepared() -> bool:
    """Install with what `prepare` held, which is then forgotten here; False if nothing was prepared."""
    global _prepared
    if _prepared is None:
        return False
    key, fd = _prepared
    _prepared = None
    install(key=key, fd=fd)
    return True


def install(*, key: bytes | None, fd: int) -> None:
    """Install the hook: results go to `fd`, signed with `key` (unsigned when None). Once per process."""
    global _installed
    if _installed:
        raise RuntimeError("the grading sandbox is already installed")
    _installed = True
    import _thread

    start_new_thread = _thread.start_new_thread
    fork_exec = None
    try:
        import _posixsubprocess

        fork_exec = _posixsubprocess.fork_exec
    except ImportError:  # Windows
        pass
    sys.addaudithook(_make_hook(key, fd, start_new_thread, fork_exec))
    # `_posixsubprocess.fork_exec` (what subprocess and multiprocessing start processes with) raises no
    # audit event: it goes through the hook too, which holds the only reference to the real one.
    if fork_exec is not None:
        import subprocess  # noqa: F401  (it keeps its own reference, `subprocess._fork_exec`: replaced below)

        for module in list(sys.modules.values()):
            if isinstance(module, types.ModuleType):
                namespace = module.__dict__
                for name, value in list(namespace.items()):
                    if value is fork_exec:
                        namespace[name] = _fork_exec
    # `_posixshmem.shm_open` makes /dev/shm files and `os.memfd_create` anonymous memory files, both shared
    # memory without an audit event: no caller needs them here.
    try:
        import _posixshmem

        _posixshmem.shm_open = _shm_open
    except ImportError:
        pass
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None:
        for module in list(sys.modules.values()):
            if isinstance(module, types.ModuleType) and module.__dict__.get("memfd_create") is memfd_create:
                module.memfd_create = _shm_open
    # Threads start through the hook, which holds the only reference to the real function: code the
    # student's code starts would run with none of its frames on the stack.
    for module in (_thread, sys.modules.get("threading")):
        for name in ("start_new_thread", "start_new", "_start_new_thread"):
            if module is not None and getattr(module, name, None) is start_new_thread:
                setattr(module, name, _start_new_thread)


def _start_new_thread(function, args, kwargs=None):
    box: list = []
    sys.audit(THREAD, function, args, {} if kwargs is None else kwargs, box)
    if not box:
        raise TamperError("kata: starting threads is not available while your code is graded")
    return box[0]


def _fork_exec(*args):
    box: list = []
    sys.audit(FORK_EXEC, args, box)
    if not box:
        raise TamperError("kata: starting processes is not available while your code is graded")
    return box[0]


def _shm_open(*args, **kwargs):
    raise TamperError("kata: shared memory is not available while your code is graded")


def _make_hook(key: bytes | None, fd: int, start_new_thread, fork_exec):
    # Everything the hook uses is captured now, as C functions or immutable data held in this closure,
    # so that the student's code cannot change what the hook does by rebinding names anywhere.
    import _json
    import _thread
    from operator import is_

    try:
        from _hashlib import hmac_digest as _hmac_digest
    except ImportError:  # Python built without OpenSSL
        import hmac as _hmac_module

        _hmac_digest = _hmac_module.digest

    getframe = sys._getframe
    get_ident = _thread.get_ident
    os_write, os_stat, os_fstat, os_getcwd = os.write, os.stat, os.fstat, os.getcwd
    os_getpid = os.getpid
    os_getpgid = getattr(os, "getpgid", lambda pid: -1)
    encode_str = _json.encode_basestring_ascii
    s_type, s_len, s_all, s_map = type, len, all, map
    s_str, s_int, s_float, s_bool, s_list, s_tuple, s_dict = str, int, float, bool, list, tuple, dict
    s_repr, s_callable, s_id, s_sorted = repr, callable, id, sorted
    s_frozenset, s_set, s_bytes = frozenset, set, bytes
    module_type = types.ModuleType
    function_type = types.FunctionType
    missing = object()
    inf = float("inf")
    permission_error = PermissionError  # a C type: raising it runs none of the student's code
    dict_get = s_dict.get
    get_mro = type.__dict__["__mro__"].__get__
    from itertools import repeat

    def str_keys(mapping) -> bool:
        """Whether every key is exactly a str: only then is looking a name up in it free of the
        student's code (a key of theirs could hash like a name and compare itself equal to it)."""
        return s_all(s_map(is_, s_map(s_type, mapping), repeat(s_str)))

    get_type_dict = type.__dict__["__dict__"].__get__
    import functools
    import pathlib

    partial_type = functools.partial
    path_types = s_frozenset({pathlib.PurePosixPath, pathlib.PureWindowsPath, pathlib.PosixPath,
                              pathlib.WindowsPath, pathlib.Path, pathlib.PurePath})
    # Nothing below may run the student's code: while the hook runs, its own audit events are ignored.
    # So no method of an object the student's code made is ever called here (no str(), no hash of
    # theirs, no attribute lookup through their metaclass): only C functions of the built-in types.

    busy: set = set()  # threads inside the hook (its own audit events are not its business)
    state = {
        "configured": False, "sealed": False, "seq": 0, "tampered": [], "student_files": frozenset(),
        "reference_files": frozenset(), "grader_dirs": (), "trusted": (), "untrusted": (), "library": (),
        "protected_ids": frozenset(), "protected_dirs": frozenset(), "protected_prefixes": (), "proc_dev": None,
        "progress_ids": frozenset(), "progress_prefixes": (),
        "writable_blocked": (), "core": [], "full": [], "mode": None, "push": None, "pop": None,
        "stack_len": None, "mode_pushed": [], "owners": {}, "owners_by_dict": {}, "keep": None,
        "builtins_module": None, "reference": None,
        "reference_codes": frozenset(), "reference_classes": frozenset(), "student_module": None,
        "tainted": set(), "tainted_keep": [], "substituted": {}, "default_dtype": None,
        "get_default_dtype": None, "cache": {}, "kata_dir": _KATA_DIR, "results_id": None,
    }
    try:
        st = os_fstat(fd)
        state["results_id"] = (st.st_dev, st.st_ino)
    except OSError:
        pass

    # ---------------------------------------------------------------- writing

    def encode(value, depth=0):
        t = s_type(value)
        if t is s_str:
            return encode_str(value)
        if t is s_bool:
            return "true" if value else "false"
        if value is None:
            return "null"
        if t is s_int:
            return s_int.__repr__(value)
        if t is s_float:
            if value != value or value == inf or value == -inf:
                return "null"
            return s_float.__repr__(value)
        if depth > 20:
            return "null"
        if t is s_list or t is s_tuple:
            return "[" + ", ".join([encode(v, depth + 1) for v in value]) + "]"
        if t is s_dict:
            return "{" + ", ".join([encode_str(k if s_type(k) is s_str else s_repr(k)) + ": " + encode(v, depth + 1)
                                    for k, v in value.items()]) + "}"
        # Subclasses of the plain types (torch's version string is one): their plain value, through the
        # base type's own C methods, so no method of the subclass runs here.
        if issubclass(t, s_str):
            return encode_str(s_str.__str__(value))
        if issubclass(t, s_int):
            return s_int.__repr__(value)
        if issubclass(t, s_float):
            return encode(s_float.__float__(value), depth + 1)
        return "null"

    def write(event: str, fields: dict) -> None:
        seq = state["seq"]
        state["seq"] = seq + 1
        record = s_dict(fields) if s_type(fields) is s_dict else {}
        record["event"] = event
        record["seq"] = seq
        payload = encode(record)
        if key is not None:
            mac = _hmac_digest(key, payload.encode("utf-8"), "sha256").hex()
            line = payload + "\t" + mac + "\n"
        else:
            line = payload + "\n"
        data = line.encode("utf-8")
        while data:
            written = os_write(fd, data)
            data = data[written:]

    def tamper(message: str, where=None) -> None:
        """Report tampering once per distinct message; the parent turns it into the kata's outcome."""
        if message in state["tampered"]:
            return
        state["tampered"].append(message)
        fields = {"message": message}
        if where is not None:
            fields["file"], fields["line"] = where
        write("tamper", fields)

    # ---------------------------------------------------------------- who is running

    def classify(filename: str) -> int:
        """0 trusted code, 1 the student's file, 2 other untrusted code, 3 the current reference."""
        if not state["configured"]:
            return 0
        cache = state["cache"]
        kind = cache.get(filename)
        if kind is None:
            if filename in state["student_files"]:
                kind = 1
            elif filename in state["reference_files"]:
                kind = 3
            elif filename.startswith("<"):
                kind = 0  # frozen modules and templates compiled by the code generators allowed below
            elif filename.startswith(state["untrusted"]):
                kind = 2
            elif filename.startswith(state["trusted"]):
                kind = 0
            else:
                kind = 2
            cache[filename] = kind
        return kind

    # Frames are classified by their globals (not audited, unlike f_code): every frame running in
    # one module's namespace gets the kind of the first of them seen, looked up once by file name.
    by_globals: dict = {}
    pinned: list = []  # the globals dicts in `by_globals`, kept alive so that their ids stay theirs

    def kind_of(frame) -> int:
        namespace = frame.f_globals
        kind = by_globals.get(s_id(namespace))
        if kind is None:
            kind = classify(frame.f_code.co_filename)
            if state["configured"]:
                by_globals[s_id(namespace)] = kind
                pinned.append(namespace)
        return kind

    def student_on_stack(frame) -> bool:
        while frame is not None:
            kind = kind_of(frame)
            if kind == 1 or kind == 2:
                return True
            frame = frame.f_back
        return False

    def student_where(frame):
        while frame is not None:
            if classify(frame.f_code.co_filename) in (1, 2):
                return (frame.f_code.co_filename, frame.f_lineno)
            frame = frame.f_back
        return None

    stdlib_dirs = _STDLIB_DIRS
    code_readers = s_frozenset(
        (os.path.join(d, module), function) for d in _STDLIB_DIRS
        for module, function in (("inspect.py", "_has_code_flag"), ("inspect.py", "_signature_is_functionlike"),
                                 ("inspect.py", "_signature_from_function"), ("typing.py", "overload")))

    def for_library(frame, helper: str) -> bool:
        """Whether the standard library's `helper` (a file name's ending) is at work in this stretch of
        standard-library frames for library code (torch, say), not directly for the student's code."""
        seen = False
        while frame is not None and (frame.f_code.co_filename.startswith("<frozen") or (
                frame.f_code.co_filename.startswith(stdlib_dirs)
                and not frame.f_code.co_filename.startswith(_SITE_DIRS))):  # a venv's site-packages is below
            seen = seen or frame.f_code.co_filename.endswith(helper)
            frame = frame.f_back
        return seen and frame is not None and classify(frame.f_code.co_filename) == 0

    def within(frame, parts: tuple) -> bool:
        """Whether a frame of code whose file name contains one of `parts` is on the stack."""
        while frame is not None:
            name = frame.f_code.co_filename
            if any(part in name for part in parts):
                return True
            frame = frame.f_back
        return False

    sealed_ids: list = []  # built on first use: the ids of every function and class reachable from the seal

    def sealed_target(obj) -> bool:
        """Whether `obj` is a module, class or function the seal holds (bound in a sealed namespace, or
        behind one: a method's function, a property's, a decorator's wrapped function or closure)."""
        if s_id(obj) in state["owners"]:
            return True
        if not sealed_ids:
            found = s_set()
            pending = []
            for item in state["full"]:
                pending.extend(item[1].values())
                pending.extend(v for _, _, copy in item[4] for v in (copy.values() if s_type(copy) is s_dict else copy))
            while pending:
                value = pending.pop()
                t = s_type(value)
                if t is function_type:
                    if s_id(value) in found:
                        continue
                    found.add(s_id(value))
                    for cell in value.__closure__ or ():
                        try:  # noqa: SIM105 (the hook runs built-in code only, no contextlib)
                            pending.append(cell.cell_contents)
                        except ValueError:  # an empty cell
                            pass
                    pending.append(dict_get(value.__dict__, "__wrapped__", None))
                    pending.extend(value.__defaults__ or ())
                elif t is staticmethod or t is classmethod or t is types.MethodType:
                    pending.append(value.__func__)
                elif t is property:
                    pending.extend((value.fget, value.fset, value.fdel))
                elif t is partial_type:
                    pending.append(value.func)
                elif issubclass(t, type):
                    found.add(s_id(value))
            sealed_ids.append(s_frozenset(found))
        return s_id(obj) in sealed_ids[0]

    def called_by_kata(frame) -> bool:
        """Whether the first frame outside the standard library is the kata package's (say, `kata.earlier`
        reading the course on the student's behalf: it lists the graders' names, never their content)."""
        while frame is not None and frame.f_code.co_filename.startswith((*stdlib_dirs, "<frozen")):
            frame = frame.f_back
        return frame is not None and frame.f_code.co_filename.startswith(state["kata_dir"])

    def substituted_below(frame) -> bool:
        """Whether a reference function a grader substituted into the student's module is on the stack
        above the student's code (the student's code calling it, and it calling its own helpers)."""
        allowed = None
        while frame is not None:
            kind = classify(frame.f_code.co_filename)
            if kind == 1 or kind == 2:
                return False
            if kind == 3:
                if allowed is None:
                    module = state["student_module"]
                    allowed = s_set()
                    if module is not None and str_keys(module.__dict__):
                        for name, value in s_list(state["substituted"].items()):
                            if module.__dict__.get(name, missing) is value and s_type(value) is function_type:
                                allowed.add(s_id(value.__code__))
                if s_id(frame.f_code) in allowed:
                    return True
            frame = frame.f_back
        return False

    def first_outside_library(frame):
        library = state["library"]
        while frame is not None and frame.f_code.co_filename.startswith(library):
            frame = frame.f_back
        return frame

    # ---------------------------------------------------------------- the seal

    def callable_like(value) -> bool:
        t = s_type(value)
        if s_callable(value) or issubclass(t, module_type):
            return True
        return any("__get__" in get_type_dict(c) for c in get_mro(t))  # a descriptor (a property, say)

    def entry(mapping, label: str, strict: bool, is_class: bool):
        saved = mapping.copy()
        deep = []
        if strict:
            for k, v in saved.items():
                tv = s_type(v)
                if tv is s_dict:
                    deep.append((k, v, v.copy()))
                elif tv is s_list or tv is s_set:
                    deep.append((k, v, s_tuple(v)))
        return [mapping, saved, strict, label, deep, is_class]

    def snapshot(graders: frozenset, extra: list) -> None:
        import gc

        core_classes = []
        for owner, attr in (("torch", "Tensor"), ("torch.nn", "Module"), ("torch.nn", "Parameter")):
            module = sys.modules.get(owner)
            if module is not None and attr in module.__dict__:
                core_classes.append(module.__dict__[attr])

        full, core, seen = [], [], s_set()
        owners: dict = {}  # id(module or class) -> its entry, to verify what a caller can reach
        owners_by_dict: dict = {}  # id(its namespace) -> the same entry
        is_class = type.__dict__["__instancecheck__"].__get__(type)  # isinstance(value, type), from C
        core_names = s_frozenset(_CORE_MODULES)

        def add(owner, mapping, label, strict, is_core, is_class):
            if s_id(mapping) in seen:
                return
            seen.add(s_id(mapping))
            item = entry(mapping, label, strict, is_class)
            full.append(item)
            owners[s_id(owner)] = item
            owners_by_dict[s_id(mapping)] = item
            if is_core:
                core.append(item)

        modules = [(name, module) for name, module in s_list(sys.modules.items())
                   if issubclass(s_type(module), module_type)]
        modules += extra
        for name, module in modules:
            strict = name in _STRICT_NAMES or name.startswith(_STRICT_PREFIXES) or name in graders
            is_core = strict or name in core_names
            try:
                namespace = module.__dict__
            except Exception:
                continue
            add(module, namespace, name, strict, is_core, False)
            # The classes bound here (filtered at C speed: most values are not classes).
            for value in s_list(filter(is_class, s_list(namespace.values()))):
                mapping = value.__dict__
                owner = mapping.get("__module__", None)
                if s_type(owner) is s_str and owner != name and owner in sys.modules:
                    continue  # re-exported: sealed with its own module
                real = gc.get_referents(mapping)
                if real and s_type(real[0]) is s_dict:
                    add(value, real[0], name + "." + s_str(type.__dict__["__name__"].__get__(value)), strict,
                        strict or any(value is c for c in core_classes), True)
        state["full"], state["core"], state["owners"] = full, core, owners
        state["owners_by_dict"] = owners_by_dict
        state["builtins_module"] = sys.modules.get("builtins")
        state["keep"] = modules  # ids in `owners` stay valid

    def verify(entries) -> list:
        """The labels of what changed; refreshes entries whose only changes are allowed."""
        changed = []
        for item in entries:
            mapping, saved, strict, label, deep, is_class = item
            if s_len(mapping) == s_len(saved) and s_all(s_map(is_, saved.values(), mapping.values())):
                for name, container, copy in deep:
                    if s_type(copy) is s_dict:
                        if s_len(container) != s_len(copy) or not s_all(s_map(is_, copy.values(), container.values())):
                            changed.append(label + "." + name)
                    elif s_len(container) != s_len(copy) or not s_all(s_map(is_, copy, container)):
                        changed.append(label + "." + name)
                continue
            if not str_keys(mapping):
                changed.append(label + ".<a key that is not a str>")
                continue
            bad = []
            for k, v in saved.items():
                now = mapping.get(k, missing)
                if now is v:
                    continue
                if strict or callable_like(v) or (now is not missing and callable_like(now)):
                    if k == "__warningregistry__" or (label == "sys" and k in ("stdout", "stderr", "stdin")):
                        continue
                    bad.append(k)
            for k in s_list(mapping):
                if k in saved:  # str keys only (checked above)
                    continue
                value = mapping.get(k, missing)
                if s_type(k) is s_str and k in _BENIGN_ADDITIONS:
                    continue
                if strict or (is_class and callable_like(value)) or (not is_class and k in builtin_names):
                    bad.append(k)
            if bad:
                changed.extend(label + "." + s_str(k) for k in bad[:3])
            else:
                item[1] = mapping.copy()
        dtype_getter = state["get_default_dtype"]
        if dtype_getter is not None and dtype_getter() is not state["default_dtype"]:
            changed.append("torch default dtype (torch.set_default_dtype)")
        return changed

    def reachable(caller) -> list:
        """The sealed namespaces the calling code can look names up in: its module's, the modules and
        classes its names and local variables refer to (and their bases)."""
        owners = state["owners"]
        found, seen_ids = [], s_set()

        def take(obj):
            key = s_id(obj)
            if key in seen_ids:
                return
            seen_ids.add(key)
            item = owners.get(key)
            if item is not None:
                found.append(item)

        def take_type(cls):
            for base in type.__dict__["__mro__"].__get__(cls):
                take(base)

        f_globals = caller.f_globals
        item = state["owners_by_dict"].get(s_id(f_globals))
        if item is not None and s_id(f_globals) not in seen_ids:
            seen_ids.add(s_id(f_globals))
            found.append(item)
        if not str_keys(f_globals):
            return found
        builtins_module = state["builtins_module"]
        for name in caller.f_code.co_names:
            value = dict_get(f_globals, name, missing)
            if value is missing:
                continue
            t = s_type(value)
            if issubclass(t, type):
                take_type(value)
            else:
                take(value)
                take_type(t)
        for value in caller.f_locals.values():
            t = s_type(value)
            if issubclass(t, type):
                take_type(value)
            elif t is not s_int and t is not s_str and t is not s_float:
                take(value)
                take_type(t)
        if builtins_module is not None:
            take(builtins_module)
        return found

    builtin_names = s_frozenset(vars(sys.modules["builtins"]))

    def check_seal(scope: str, where=None, caller=None) -> bool:
        if not state["sealed"]:
            return True
        if scope == "caller":  # what the calling code can look names up in (the core is checked per result)
            changed = verify(reachable(caller))
        else:
            changed = verify(state["full"] if scope == "full" else state["core"])
        if changed:
            names = ", ".join(s_sorted(s_set(changed))[:5])
            tamper(f"your code changed what the graders rely on ({names}): the checks must run on torch, "
                   "pytest and the graders as they are", where)
            return False
        return True

    student_name = "exercise"  # the name the plugin loads the student's module under (its classes' __module__)

    def check_student_module(where=None) -> None:
        """The student's names must not be the reference solution's own code."""
        module = state["student_module"]
        codes = state["reference_codes"]
        classes = state["reference_classes"]
        if module is None or (not codes and not classes):
            return

        def is_reference(value, depth=0) -> bool:
            if depth > 3:
                return False
            t = s_type(value)
            if t is function_type:
                return s_id(value.__code__) in codes
            if t is types.MethodType or t is staticmethod or t is classmethod:
                return is_reference(value.__func__, depth + 1)
            if t is property:
                return any(is_reference(f, depth + 1) for f in (value.fget, value.fset) if f is not None)
            if issubclass(t, type):
                return any(s_id(c) in classes for c in get_mro(value))
            if t is partial_type:
                return is_reference(value.func, depth + 1)
            return False

        substituted = state["substituted"]
        namespace = module.__dict__
        if not str_keys(namespace):
            tamper("your module's namespace holds a key that is not a name", where)
            return
        for name, value in s_list(namespace.items()):
            if substituted.get(name, missing) is value:
                continue
            if is_reference(value):
                tamper(f"your {name} is the reference solution's, not your own code", where)
                return
            members = get_type_dict(value) if issubclass(s_type(value), type) else None
            if members is not None and str_keys(members) and members.get("__module__") is student_name:
                for attr, member in s_list(members.items()):
                    if is_reference(member):
                        tamper(f"your {name}.{attr} is the reference solution's, not your own code", where)
                        return

    # ---------------------------------------------------------------- the forbidden-built-in mode

    def push_mode() -> None:
        mode = state["mode"]
        if mode is None:
            return
        state["push"](mode)
        state["mode_pushed"].append(state["stack_len"]())

    def pop_mode() -> None:
        pushed = state["mode_pushed"]
        if not pushed:
            return
        depth = pushed.pop()
        # Pop only our own mode at the depth we pushed it; anything else is left for verification.
        if state["stack_len"]() == depth:
            top = state["pop"]()
            if top is not state["mode"]:
                state["push"](top)
                tamper("your code changed the torch function mode stack (a TorchFunctionMode of its own?)")

    def clear_mode() -> None:
        while state["mode_pushed"]:
            pop_mode()

    # ---------------------------------------------------------------- paths

    unknown_path = object()

    def path_of(value):
        """A str, bytes or int path as given; `unknown_path` for any other object (a path-like object of
        the student's could answer differently each time it is asked, and run code in here)."""
        t = s_type(value)
        if t is s_str or t is s_bytes or t is s_int:
            return value
        if t in path_types:
            return s_str(value)  # pathlib's own types: their code is sealed
        return unknown_path

    def file_ids(paths) -> frozenset:
        """(device, inode) of each path that exists: a file is recognised under any name or link."""
        ids = s_set()
        for path in paths:
            try:
                st = os_stat(path)
                ids.add((st.st_dev, st.st_ino))
            except OSError:
                pass
        return s_frozenset(ids)

    def absolute(path):
        text = path.decode("utf-8", "replace") if s_type(path) is s_bytes else path
        if not text.startswith(os.sep):
            text = os_getcwd() + os.sep + text
        return text

    def protected(path) -> str | None:
        """Why `path` is off limits to the student's code, or None."""
        if path is None:
            return None
        if path is unknown_path:
            return "unknown"
        try:
            st = os_fstat(path) if s_type(path) is s_int else os_stat(path)
        except (OSError, ValueError, TypeError):
            st = None
        if st is not None:
            ident = (st.st_dev, st.st_ino)
            if ident in state["progress_ids"]:
                return "progress"
            if ident in state["protected_ids"] or ident in state["protected_dirs"]:
                return "hidden"
            if ident == state["results_id"]:
                return "results"
            if st.st_dev == state["proc_dev"]:
                return "proc"
        if s_type(path) is s_int:
            return None
        text = absolute(path)
        if text.startswith(state["progress_prefixes"]):
            return "progress"
        if text.startswith(state["protected_prefixes"]):
            return "hidden"
        return None

    def write_blocked(path) -> bool:
        if path is None or path is unknown_path or s_type(path) is s_int:
            return False
        text = absolute(path)
        return text.endswith(_CODE_SUFFIXES) or text.startswith(state["writable_blocked"])

    def deny(message: str, *, report: bool, frame) -> None:
        where = student_where(frame)
        if report:
            tamper(message, where)
        raise permission_error("kata: " + message + (" (this attempt is reported)" if report else ""))

    # ---------------------------------------------------------------- commands from the plugin

    def command(event: str, args, frame) -> None:
        caller = frame.f_code.co_filename if frame is not None else ""
        if event == TAMPER:
            tamper(args[0] if args and s_type(args[0]) is s_str else "tampering", student_where(frame))
            return
        if event == THREAD:
            if caller.startswith(state["kata_dir"]) and not student_on_stack(frame.f_back):
                function, thread_args, kwargs, box = args
                box.append(start_new_thread(function, thread_args, kwargs))
                return
            deny("starting threads is not available while your code is graded", report=False, frame=frame)
        if event == FORK_EXEC:
            if fork_exec is not None and caller.startswith(state["kata_dir"]) and not student_on_stack(frame.f_back):
                process_args, box = args
                box.append(fork_exec(*process_args))
                return
            deny("_posixsubprocess.fork_exec is not allowed while your code is graded (no processes)", report=True,
                 frame=frame)
        if event == SUBSTITUTE:
            # A grader puts a piece of the reference into the student's module (pytest's monkeypatch):
            # the student's code may then call it, as long as it stays there.
            if caller.startswith(state["kata_dir"]) and not student_on_stack(frame.f_back):
                state["substituted"][args[0]] = args[1]
            return
        if event == TAINT:
            # A subclass of a reference class is being made: by the student's code, it may not run
            # the reference's methods.
            if caller.startswith(state["kata_dir"]) and student_on_stack(frame):
                state["tainted"].add(s_id(args[0]))
                state["tainted_keep"].append(args[0])
            return
        if not caller.startswith(state["kata_dir"]) or student_on_stack(frame):
            deny(f"{event} is for the grading plugin only", report=True, frame=frame)
        if event == RESULT:
            name, fields = args
            scope = "full" if name == "end" else "core"
            if name in ("check", "end", "import"):
                clear_mode()
                check_student_module()
                check_seal(scope)
            write(name, fields)
        elif event == STUDENT:
            if args[0] == "enter":
                push_mode()
            elif args[0] == "module":
                state["student_module"] = args[1]
            elif args[0] == "globals":
                by_globals[s_id(args[1])] = 1  # before any of its code runs: this namespace is the student's
                pinned.append(args[1])
            else:
                clear_mode()
        elif event == VERIFY:
            check_student_module()
            check_seal(args[0] if args else "core")
        elif event == FETCH_REFERENCE:
            args[0].append(state["reference"])
        elif event == STORE_REFERENCE:
            if state["reference"] is None:
                module, codes, classes = args
                state["reference"] = module
                by_globals[s_id(module.__dict__)] = 3
                pinned.append(module.__dict__)
                state["reference_codes"] = s_frozenset(s_id(c) for c in codes)
                state["reference_classes"] = s_frozenset(s_id(c) for c in classes)
                state["reference_keep"] = (s_tuple(codes), s_tuple(classes))  # ids stay valid
        elif event == CONFIGURE:
            if state["configured"]:
                return
            config = args[0]
            state["student_files"] = s_frozenset(config["student_files"])
            state["reference_files"] = s_frozenset(config["reference_files"])
            state["trusted"] = s_tuple(config["trusted"])
            state["untrusted"] = s_tuple(config["untrusted"])
            state["library"] = s_tuple(config["library"])
            state["grader_dirs"] = s_tuple(config["grader_dirs"])
            state["protected_prefixes"] = s_tuple(config["protected_prefixes"])
            state["writable_blocked"] = s_tuple(config["writable_blocked"])
            state["protected_ids"] = file_ids(config["protected_files"])
            state["protected_dirs"] = file_ids(config["protected_dirs"])
            state["progress_ids"] = file_ids(config.get("progress_files", ()))
            state["progress_prefixes"] = s_tuple(config.get("progress_files", ()))
            try:
                state["proc_dev"] = os_stat("/proc/self").st_dev
            except OSError:
                state["proc_dev"] = None
            mode = config.get("mode")
            if mode is not None:
                state["mode"], state["push"], state["pop"], state["stack_len"] = mode
            dtype_getter = config.get("get_default_dtype")
            if dtype_getter is not None:
                state["get_default_dtype"] = dtype_getter
            state["cache"] = {}
            state["configured"] = True
        elif event == SEAL:
            if state["sealed"]:
                return
            graders, extra = args
            import gc
            import warnings

            enabled = gc.isenabled()
            gc.disable()  # a hundred thousand small objects: no reason to scan torch's million each time
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # deprecated aliases (torch.distributed.reduce_op) warn
                    snapshot(s_frozenset(graders), s_list(extra))
            finally:
                if enabled:
                    gc.enable()
            if state["get_default_dtype"] is not None:
                state["default_dtype"] = state["get_default_dtype"]()
            state["sealed"] = True

    # ---------------------------------------------------------------- markers

    def marker(func, frame) -> bool:
        """Handle an entry/exit marker; False when `func` is not one."""
        defaults = func.__defaults__
        if defaults is None or s_len(defaults) != 1 or s_type(defaults[0]) is not s_str:
            return False
        token = defaults[0]
        if token != ENTER and token != LEAVE and token != REFERENCE:
            return False
        if frame is None:
            return True
        kind = classify(frame.f_code.co_filename)
        if token == REFERENCE:
            if kind != 3:
                return True
            caller = frame.f_back
            if student_on_stack(caller) and not substituted_below(caller):
                deny("your code called the reference solution: write it yourself", report=True, frame=caller)
            if state["tainted"]:
                code = frame.f_code
                if code.co_argcount:
                    first = frame.f_locals.get(code.co_varnames[0], missing)
                    cls = first if issubclass(s_type(first), type) else s_type(first)
                    if s_id(cls) in state["tainted"]:
                        deny("your class uses the reference solution's methods: write them yourself",
                             report=True, frame=frame)
            return True
        if kind != 1:
            return True
        if frame.f_code.co_name in ("__torch_function__", "__torch_dispatch__"):
            deny(f"{frame.f_code.co_name} overrides how torch computes (and how graders compare): "
                 "return plain tensors", report=True, frame=frame)
        outer = first_outside_library(frame.f_back)
        if outer is not None and classify(outer.f_code.co_filename) in (1, 2):
            return True  # the student's code calling its own: not a boundary
        where = (frame.f_code.co_filename, frame.f_lineno)
        if token == ENTER:
            # Grading code calls into the student's code: whatever it called must still be the
            # student's own function, not one planted where torch, a grader or pytest keeps theirs.
            check_seal("caller", where, frame.f_back)
            push_mode()
        else:
            pop_mode()
        return True

    # ---------------------------------------------------------------- the hook

    def hook(event, args):
        if event not in _WATCHED and event not in _OWN and not event.startswith("ctypes."):
            return
        ident = get_ident()
        if ident in busy:
            return
        busy.add(ident)
        try:
            handle(event, args)
        finally:
            busy.discard(ident)

    def handle(event, args):
        frame = getframe(2)  # 0 handle, 1 hook, 2 the code that raised the event
        if event in _OWN:
            command(event, args, frame)
            return
        if not state["configured"]:
            return
        if event == "object.__getattr__":
            name = args[1] if s_len(args) > 1 else None
            if name not in _FRAME_ATTRIBUTES:
                return
            if name == "__code__" and s_type(args[0]) is function_type and marker(args[0], frame):
                return
            if frame is not None and frame.f_code.co_filename.startswith(state["kata_dir"]):
                return  # the guard and this toolkit look at frames; they never hand one out
            if name == "__code__" and frame is not None and (frame.f_code.co_filename, frame.f_code.co_name) in \
                    code_readers:
                return  # inspect.signature (for a dataclass, say): it returns a signature, not the code
            if (frame is not None and classify(frame.f_code.co_filename) == 2) or student_on_stack(frame):
                deny(f"reading {name} is not allowed while your code is graded (stack frames and code "
                     "objects belong to the graders)", report=False, frame=frame)
            return
        immediate = classify(frame.f_code.co_filename) if frame is not None else 0
        if event.startswith("ctypes."):
            if immediate in (1, 2) or student_on_stack(frame):
                deny("ctypes is not allowed while your code is graded", report=True, frame=frame)
            return
        if event == "open" or event == "os.open":
            path = path_of(args[0]) if args else None
            if immediate == 0 and not student_on_stack(frame):
                return
            why = protected(path)
            if why == "hidden":
                deny(f"reading {s_str(path)} is not allowed: the graders and the reference solution are hidden",
                     report=not for_library(frame, _LINE_CACHE),
                     frame=frame)
            if why == "progress":
                deny(f"opening {s_str(path)} is not allowed: the progress file is kata's to write, after the checks",
                     report=True, frame=frame)
            if why == "results":
                deny("the results of the checks are written by the graders only", report=True, frame=frame)
            if why == "unknown":
                deny("open() takes a str, bytes or pathlib path while your code is graded", report=False,
                     frame=frame)
            if why == "proc":
                deny(f"{s_str(path)}: /proc is not available while your code is graded", report=True, frame=frame)
            mode = args[1] if s_len(args) > 1 else None
            flags = args[2] if s_len(args) > 2 else 0
            writing = (s_type(mode) is s_str and ("w" in mode or "a" in mode or "x" in mode or "+" in mode)) or (
                s_type(flags) is s_int and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC))
            if writing and s_type(path) is not s_int and absolute(path).startswith(_SHARED_MEMORY_DIRS):
                deny(f"writing {s_str(path)} is not allowed while your code is graded: files in /dev/shm are memory "
                     "the kata's limit would not count", report=True, frame=frame)
            if writing and write_blocked(path):
                deny(f"writing {s_str(path)} is not allowed while your code is graded (no Python files, nothing "
                     "inside the Python installation or the course's graders and solutions)", report=True,
                     frame=frame)
            return
        if event in _LISTINGS:
            if immediate == 0 and not student_on_stack(frame):
                return
            path = path_of(args[0]) if args else None
            if path is not None and protected(path) is not None and not called_by_kata(frame):
                deny(f"listing {s_str(path)} is not allowed: the graders and the reference solution are hidden",
                     report=True, frame=frame)
            return
        if event in _PATH_WRITES:
            if immediate == 0 and not student_on_stack(frame):
                return
            for value in args[:2]:
                path = path_of(value)
                if path is not None and s_type(path) is not s_int and (
                        protected(path) is not None or write_blocked(path)):
                    deny(f"{event} on {s_str(path)} is not allowed while your code is graded", report=True,
                         frame=frame)
            if event in ("os.link", "os.symlink"):
                deny(f"{event} is not allowed while your code is graded", report=False, frame=frame)
            return
        if event in _PROCESSES:
            if immediate == 0 and not student_on_stack(frame):
                return
            if event == "signal.pthread_kill" or (event == "os.kill" and args and args[0] == os_getpid()) or (
                    event == "os.killpg" and args and args[0] == os_getpgid(0)):
                return  # the grading process signalling itself: a crash, never a pass
            report = event in ("os.kill", "os.killpg", "signal.pthread_kill", "resource.setrlimit",
                               "resource.prlimit")
            deny(f"{event} is not allowed while your code is graded (no processes, signals or limits)",
                 report=report, frame=frame)
        if event == "compile" or event == "exec":
            if immediate == 0 and not student_on_stack(frame):
                return
            if immediate == 0 and frame.f_code.co_filename.endswith(_CODE_HELPERS):
                code = args[0] if args else None
                if s_type(code) is types.CodeType and classify(code.co_filename) == 2:
                    deny(f"importing {code.co_filename} is not available while your code is graded: keep your "
                         "code in the exercise file", report=False, frame=frame)
                return
            if immediate == 0 and within(frame, _COMPILERS):
                deny("torch.compile is not available while your code is graded: the checks grade your code as "
                     "written, so leave torch.compile out", report=False, frame=frame)
            deny(f"{'compiling' if event == 'compile' else 'running'} code at run time (exec, eval, compile) "
                 "is not allowed while your code is graded", report=False, frame=frame)
        if event == "import":
            if args and args[0] in _UNAUDITED_MODULES and (immediate != 0 or student_on_stack(frame)):
                deny(f"importing {args[0]} anew is not allowed while your code is graded (no processes, no shared "
                     "memory)", report=True, frame=frame)
            return
        if event in _CHANNELS:
            if immediate == 0 and not student_on_stack(frame):
                return
            what = "memory mappings (mmap)" if event == "mmap.__new__" else "sockets (no network)"
            deny(f"{event}: {what} are not allowed while your code is graded", report=event == "mmap.__new__",
                 frame=frame)
        if event in _INTROSPECTION:
            if immediate == 0:
                if not student_on_stack(frame):
                    return
                filename = frame.f_code.co_filename
                if event == "sys._getframe" and (filename.endswith(_FRAME_HELPERS)
                                                 or filename.startswith(state["kata_dir"])
                                                 or for_library(frame, _STACK_TEXT)):
                    return
                if event in ("marshal.loads", "marshal.load") and filename.startswith("<frozen importlib"):
                    return
                if event == "object.__setattr__" and s_len(args) > 1 and (
                        args[1] in ("__module__", "__qualname__", "__name__", "__doc__", "__annotations__")
                        or (issubclass(s_type(args[0]), _SETATTR_TARGETS) and not sealed_target(args[0]))):
                    return
            report = event in ("object.__setattr__", "object.__delattr__", "sys.addaudithook")
            deny(f"{event} is not allowed while your code is graded", report=report, frame=frame)

    def sample(signum, frame):
        """The parent's time budget ran out: write where the student's code is (their frames only). Not
        in the middle of a write of the hook's own: the parent asks again a moment later."""
        ident = get_ident()
        # Only a real frame: this handler can be fetched (signal.getsignal) and called by the student's code
        # with an object of theirs, whose attributes would then run while the hook looks away.
        if ident in busy or sampled or s_type(frame) is not frame_type:
            return
        busy.add(ident)
        try:
            frames = []
            while frame is not None:
                if classify(frame.f_code.co_filename) == 1:
                    frames.append({"file": frame.f_code.co_filename, "line": frame.f_lineno,
                                   "function": frame.f_code.co_name})
                frame = frame.f_back
            frames.reverse()
            sampled.append(True)
            write("stack", {"frames": frames})
        finally:
            busy.discard(ident)

    sampled: list = []
    frame_type = types.FrameType
    import contextlib
    import signal

    from kata.grading.protocol import STACK_SIGNAL

    if hasattr(signal, STACK_SIGNAL):
        with contextlib.suppress(ValueError):  # outside the main thread: no samples, the rest works
            signal.signal(getattr(signal, STACK_SIGNAL), sample)
    return hook


class StudentModule(types.ModuleType):
    """The student's module: a grader replacing one of its names (pytest's monkeypatch) says so."""

    def __setattr__(self, name, value):
        sys.audit(SUBSTITUTE, name, value)
        super().__setattr__(name, value)


def protect_reference_classes(module: types.ModuleType) -> tuple[list, list]:
    """The code objects and classes of a reference module; each class learns to report its subclasses."""
    codes, classes = [], []

    def collect(code):
        codes.append(code)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                collect(const)

    for value in list(vars(module).values()):
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            collect(value.__code__)
        elif isinstance(value, type) and value.__module__ == module.__name__:
            classes.append(value)
            for member in vars(value).values():
                func = getattr(member, "__func__", member)
                for f in (func, getattr(member, "fget", None), getattr(member, "fset", None)):
                    if isinstance(f, types.FunctionType):
                        collect(f.__code__)
            original = value.__dict__.get("__init_subclass__")
            value.__init_subclass__ = classmethod(_reporting_init_subclass(original, value))
    return codes, classes


def _reporting_init_subclass(original, owner):
    def __init_subclass__(cls, **kwargs):
        sys.audit(TAINT, cls)
        if original is not None:
            original.__func__(cls, **kwargs)
        else:
            super(owner, cls).__init_subclass__(**kwargs)

    return __init_subclass__
