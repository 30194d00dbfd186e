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
  reports the kata as tampered, whatever the checks said. (Where CPython's dicts carry version tags, a
  namespace whose tag has not moved is known unchanged without comparing it: `_dict_versions`.)
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
SAMPLE = "kata.sample"

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
# The standard library's functions that read a function's `__code__` to tell what it is (inspect.signature,
# for a dataclass, say): they return a signature, not the code.
_CODE_READERS = frozenset(
    (os.path.join(d, module), function) for d in _STDLIB_DIRS
    for module, function in (("inspect.py", "_has_code_flag"), ("inspect.py", "_signature_is_functionlike"),
                             ("inspect.py", "_signature_from_function"), ("typing.py", "overload")))
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
# Sockets (every socket module entry point raises one of these) and memory mappings (an anonymous or
# /dev/shm mapping is shared memory, which the memory limit does not count).
_CHANNELS = frozenset({"socket.__new__", "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg",
                       "socket.getaddrinfo", "socket.gethostbyname", "socket.socketpair", "mmap.__new__"})
# Native modules whose entry points raise no audit event: the sandbox wraps the ones loaded, and a fresh
# import of them (after deleting them from sys.modules) is refused while the student's code runs.
_UNAUDITED_MODULES = frozenset({"_posixsubprocess", "_posixshmem", "posix"})
_SHARED_MEMORY_DIRS = ("/dev/shm/", "/run/shm/")
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
# The seal a zygote took of what it loaded (`prepare_seal`), for the units it forks; taken by the first hook.
_seal_base: types.SimpleNamespace | None = None


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


def _dict_versions():
    """`version(d)`: an object whose `.value` is dict `d`'s version tag, which CPython 3.11 to 3.13 sets anew,
    from one ever-growing counter, whenever `d` changes (PEP 509); None on any other interpreter, or where
    the dicts made here do not behave so. Reading a tag touches nothing in `d` or its values."""
    import ctypes

    if sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info[:2] <= (3, 13) \
            or hasattr(sys, "gettotalrefcount") or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return None  # another interpreter, or objects laid out otherwise: a debug build, a free-threaded one
    word = ctypes.sizeof(ctypes.c_ssize_t)
    size_at, tag_at = 2 * word, 3 * word  # after the reference count and the type: ma_used, ma_version_tag
    from_address = ctypes.c_uint64.from_address

    def version(d: dict):
        return from_address(id(d) + tag_at)

    probe: dict = {}
    last = version(probe).value
    for change in (lambda: probe.__setitem__("a", object()), lambda: probe.__setitem__("a", object()),
                   lambda: probe.update(b=1), lambda: probe.pop("a"), probe.clear):
        change()
        now = version(probe).value
        if now <= last or ctypes.c_ssize_t.from_address(id(probe) + size_at).value != len(probe):
            return None
        last = now
    return version


def prepare_seal() -> None:
    """In a zygote (`kata.grading.zygote`), once its imports are done: seal what is loaded, for the units it
    forks. A unit's seal then starts from this one and copies again only the namespaces that changed since,
    told by their dicts' version tags, rather than all of them; the hook's replacement of
    `_posixsubprocess.fork_exec` scans only those too. Copying a namespace touches every object bound in
    it, and each page a forked unit touches is one the kernel must copy: that was most of what sealing
    cost a unit. Nothing here where dicts carry no version tag: a unit then seals as a cold child does."""
    global _seal_base
    seal = _seal(None)
    if seal.export is None:
        return
    modules = [(name, module) for name, module in list(sys.modules.items()) if isinstance(module, types.ModuleType)]
    seal.take(modules, frozenset(), None)
    base = seal.export()
    fork_exec = _posix_fork_exec()
    base.fork_exec_bindings = _bindings(fork_exec, [module.__dict__ for _, module in modules]) if fork_exec else []
    _seal_base = base


def _posix_fork_exec():
    """`_posixsubprocess.fork_exec`, which subprocess and multiprocessing start processes with (None on Windows)."""
    try:
        import _posixsubprocess
    except ImportError:
        return None
    return _posixsubprocess.fork_exec


def _bindings(value, namespaces: list[dict]) -> list[tuple[dict, str]]:
    """(namespace, name) for every name bound to `value` in `namespaces`."""
    return [(namespace, name) for namespace in namespaces for name, bound in list(namespace.items()) if bound is value]


def install(*, key: bytes | None, fd: int) -> None:
    """Install the hook: results go to `fd`, signed with `key` (unsigned when None). Once per process."""
    global _installed, _seal_base
    if _installed:
        raise RuntimeError("the grading sandbox is already installed")
    _installed = True
    base, _seal_base = _seal_base, None  # the hook's alone from now on
    import _thread

    start_new_thread = _thread.start_new_thread
    fork_exec = _posix_fork_exec()
    sys.addaudithook(_make_hook(key, fd, start_new_thread, fork_exec, base))
    import contextlib
    import signal

    from kata.grading.protocol import STACK_SIGNAL

    if hasattr(signal, STACK_SIGNAL):
        with contextlib.suppress(ValueError):  # outside the main thread: no samples, the rest works
            signal.signal(getattr(signal, STACK_SIGNAL), _sample_stack)
    # `_posixsubprocess.fork_exec` (what subprocess and multiprocessing start processes with) raises no
    # audit event: it goes through the hook too, which holds the only reference to the real one.
    if fork_exec is not None:
        import subprocess  # noqa: F401  (it keeps its own reference, `subprocess._fork_exec`: replaced below)

        namespaces = [module.__dict__ for module in list(sys.modules.values()) if isinstance(module, types.ModuleType)]
        known = []
        if base is not None:  # the namespaces as the zygote saw them: their bindings are the ones it found
            known = base.fork_exec_bindings
            namespaces = [namespace for namespace in namespaces if not base.unchanged(namespace)]
        for namespace, name in [*known, *_bindings(fork_exec, namespaces)]:
            if namespace.get(name) is fork_exec:
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


def _sample_stack(signum, frame, audit=sys.audit, event=SAMPLE):
    """The handler of the parent's stack signal: the hook writes the sample. A signal's handler is anyone's
    to fetch (signal.getsignal) and a closure's cells anyone's to read, so this one holds nothing."""
    audit(event, frame)


# --------------------------------------------------------------------------------------------------
# The hook's parts
#
# Each part is made by a builder: a function that captures, once, everything its closures will use (C
# functions of the built-in types, frozen data, a few cells of its own) and returns the closures in a
# SimpleNamespace, which `_make_hook` hands on to the parts that need them. So at run time no closure
# looks anything up through a name the student's code could rebind (a module attribute, a builtin): the
# test suite checks that no closure loads a global. And what the parts hold is reachable from the hook
# only, which Python does not hand out. The parts:
#   `_results_writer`   signs and writes the results; reports tampering
#   `_who_is_running`   classifies frames: the student's code, the reference's, trusted code, other code
#   `_seal`             snapshots the loaded modules and classes, and verifies them
#   `_path_policy`      which paths the student's code may open, list or change
#   `_dispatcher`       the audit hook itself: each event goes to its route, from the table that
#   `_plugin_commands`  makes (the kata package's own events) and, once kata.configure has given the
#   `_system_routes`    path policy, extends with the system's events (files, processes, code, ...)
# and the smaller ones the routes use: `_function_mode` (the torch function mode that makes the forbidden
# built-ins raise), `_refusal` (refuse an operation, report it when asked), `_reference_guard` (the
# reference solution is the graders') and `_markers` (where grading code and the student's code meet).

# What `_who_is_running` tells of a frame's code: trusted code, the student's file, other untrusted code
# (another file, code the student's code made), the current kata's reference solution. Each builder
# copies the ones it uses into its closure.
_TRUSTED_CODE, _STUDENT_CODE, _OTHER_CODE, _REFERENCE_CODE = 0, 1, 2, 3
_UNTRUSTED = (_STUDENT_CODE, _OTHER_CODE)


def _make_hook(key: bytes | None, fd: int, start_new_thread, fork_exec, base=None):
    """The audit hook, composed from its parts (see the map above); `base`: a zygote's seal (`prepare_seal`)."""
    results = _results_writer(key, fd)
    who = _who_is_running(_KATA_DIR)
    seal = _seal(results.tamper, base)
    mode = _function_mode(results.tamper)
    deny = _refusal(who.student_where, results.tamper)
    reference = _reference_guard(who, results.tamper, deny)
    markers = _markers(who, seal, mode, reference, deny)
    routes = _plugin_commands(results, who, seal, mode, reference, markers, deny, start_new_thread, fork_exec)
    return _dispatcher(routes)


def _exact_str_keys():
    """`str_keys(mapping)`: whether every key is exactly a str. Only then is looking a name up in it free of
    the student's code (a key of theirs could hash like a name and compare itself equal to it)."""
    from itertools import repeat
    from operator import is_

    s_all, s_map, s_type, s_str = all, map, type, str

    def str_keys(mapping) -> bool:
        return s_all(s_map(is_, s_map(s_type, mapping), repeat(s_str)))

    return str_keys


# --------------------------------------------------------------------------------------------------
# Signing and writing the results


def _results_writer(key: bytes | None, fd: int) -> types.SimpleNamespace:
    """The only writer of the results channel `fd`: one JSON record a line, numbered in sequence (`seq`)
    and signed with HMAC-SHA256 under `key` (unsigned when None), as `kata.grading.protocol` verifies.

    `write(event, fields)` writes a record; `tamper(message, where)` reports tampering, once per message;
    `channel` is the channel's (device, inode), so that the path policy can keep it from the student."""
    import _json

    try:
        from _hashlib import hmac_digest
    except ImportError:  # Python built without OpenSSL
        from hmac import digest as hmac_digest

    encode_str, os_write = _json.encode_basestring_ascii, os.write
    s_type, s_repr, s_issubclass = type, repr, issubclass
    s_str, s_int, s_float, s_bool, s_list, s_tuple, s_dict = str, int, float, bool, list, tuple, dict
    inf = float("inf")
    seq = 0
    tampered: list = []
    try:
        st = os.fstat(fd)
        channel = (st.st_dev, st.st_ino)
    except OSError:
        channel = None

    # Nothing here may run the student's code (a result's fields can hold their objects): only C
    # functions of the built-in types, never a method of a subclass.
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
        if s_issubclass(t, s_str):
            return encode_str(s_str.__str__(value))
        if s_issubclass(t, s_int):
            return s_int.__repr__(value)
        if s_issubclass(t, s_float):
            return encode(s_float.__float__(value), depth + 1)
        return "null"

    def write(event: str, fields: dict) -> None:
        nonlocal seq
        number, seq = seq, seq + 1
        record = s_dict(fields) if s_type(fields) is s_dict else {}
        record["event"] = event
        record["seq"] = number
        payload = encode(record)
        if key is not None:
            line = payload + "\t" + hmac_digest(key, payload.encode("utf-8"), "sha256").hex() + "\n"
        else:
            line = payload + "\n"
        data = line.encode("utf-8")
        while data:
            written = os_write(fd, data)
            data = data[written:]

    def tamper(message: str, where=None) -> None:
        """Report tampering once per distinct message; the parent turns it into the kata's outcome."""
        if message in tampered:
            return
        tampered.append(message)
        fields = {"message": message}
        if where is not None:
            fields["file"], fields["line"] = where
        write("tamper", fields)

    return types.SimpleNamespace(write=write, tamper=tamper, channel=channel)


# --------------------------------------------------------------------------------------------------
# Who is running


def _who_is_running(kata_dir: str) -> types.SimpleNamespace:
    """Whose code a frame runs (see `_TRUSTED_CODE` and the others): trusted code is the Python
    installation's, the kata package's, the graders' and the solutions'; untrusted code is the student's
    file and any other (another exercise file, code the student's code made).

    Until `configure(config)` gives the course's layout (kata.configure), all code counts as trusted;
    `register(namespace, kind)` names a module's kind before any of its code runs. The other closures
    answer what the other parts ask about a stack of frames."""
    TRUSTED_CODE, STUDENT_CODE, OTHER_CODE, REFERENCE_CODE = _TRUSTED_CODE, _STUDENT_CODE, _OTHER_CODE, _REFERENCE_CODE
    UNTRUSTED = _UNTRUSTED
    s_id, s_any, s_frozenset, s_tuple = id, any, frozenset, tuple
    stdlib_dirs, site_dirs = _STDLIB_DIRS, _SITE_DIRS
    stdlib_or_frozen = (*_STDLIB_DIRS, "<frozen")
    configured = False
    student_files = reference_files = s_frozenset()
    trusted = untrusted = library = ()
    by_filename: dict = {}
    # Frames are classified by their globals (not audited, unlike f_code): every frame running in one
    # module's namespace gets the kind of the first of them seen, looked up once by file name.
    by_globals: dict = {}
    pinned: list = []  # the globals dicts in `by_globals`, kept alive so that their ids stay theirs

    def configure(config: dict) -> None:
        nonlocal configured, student_files, reference_files, trusted, untrusted, library
        student_files = s_frozenset(config["student_files"])
        reference_files = s_frozenset(config["reference_files"])
        trusted = s_tuple(config["trusted"])
        untrusted = s_tuple(config["untrusted"])
        library = s_tuple(config["library"])
        configured = True

    def register(namespace: dict, kind: int) -> None:
        by_globals[s_id(namespace)] = kind
        pinned.append(namespace)

    def classify(filename: str) -> int:
        if not configured:
            return TRUSTED_CODE
        kind = by_filename.get(filename)
        if kind is None:
            if filename in student_files:
                kind = STUDENT_CODE
            elif filename in reference_files:
                kind = REFERENCE_CODE
            elif filename.startswith("<"):
                kind = TRUSTED_CODE  # frozen modules and templates compiled by the standard library's code generators
            elif filename.startswith(untrusted):
                kind = OTHER_CODE
            elif filename.startswith(trusted):
                kind = TRUSTED_CODE
            else:
                kind = OTHER_CODE
            by_filename[filename] = kind
        return kind

    def kind_of(frame) -> int:
        namespace = frame.f_globals
        kind = by_globals.get(s_id(namespace))
        if kind is None:
            kind = classify(frame.f_code.co_filename)
            if configured:
                register(namespace, kind)
        return kind

    def student_on_stack(frame) -> bool:
        """Whether the student's code (or other untrusted code) runs in `frame` or below it."""
        while frame is not None:
            kind = kind_of(frame)
            if kind in UNTRUSTED:
                return True
            frame = frame.f_back
        return False

    def student_where(frame):
        """(file, line) of the first untrusted frame from `frame` down, or None."""
        while frame is not None:
            kind = classify(frame.f_code.co_filename)
            if kind in UNTRUSTED:
                return (frame.f_code.co_filename, frame.f_lineno)
            frame = frame.f_back
        return None

    def in_kata(frame) -> bool:
        return frame is not None and frame.f_code.co_filename.startswith(kata_dir)

    def for_library(frame, helper: str) -> bool:
        """Whether the standard library's `helper` (a file name's ending) is at work in this stretch of
        standard-library frames for library code (torch, say), not directly for the student's code."""
        seen = False
        while frame is not None and (frame.f_code.co_filename.startswith("<frozen") or (
                frame.f_code.co_filename.startswith(stdlib_dirs)
                and not frame.f_code.co_filename.startswith(site_dirs))):  # a venv's site-packages is below
            seen = seen or frame.f_code.co_filename.endswith(helper)
            frame = frame.f_back
        return seen and frame is not None and classify(frame.f_code.co_filename) == TRUSTED_CODE

    def within(frame, parts: tuple) -> bool:
        """Whether a frame of code whose file name contains one of `parts` is on the stack."""
        while frame is not None:
            name = frame.f_code.co_filename
            if s_any(part in name for part in parts):
                return True
            frame = frame.f_back
        return False

    def called_by_kata(frame) -> bool:
        """Whether the first frame outside the standard library is the kata package's (say, `kata.earlier`
        reading the course on the student's behalf: it lists the graders' names, never their content)."""
        while frame is not None and frame.f_code.co_filename.startswith(stdlib_or_frozen):
            frame = frame.f_back
        return frame is not None and frame.f_code.co_filename.startswith(kata_dir)

    def first_outside_library(frame):
        while frame is not None and frame.f_code.co_filename.startswith(library):
            frame = frame.f_back
        return frame

    return types.SimpleNamespace(
        configure=configure, register=register, classify=classify, kind_of=kind_of,
        student_on_stack=student_on_stack, student_where=student_where, in_kata=in_kata,
        for_library=for_library, within=within, called_by_kata=called_by_kata,
        first_outside_library=first_outside_library)


# --------------------------------------------------------------------------------------------------
# The seal


def _seal(tamper, base: types.SimpleNamespace | None = None) -> types.SimpleNamespace:
    """`take(modules, graders, get_default_dtype)` records, once, the identity of every function, class
    and module bound in `modules` ((name, module) pairs) and in the classes defined there, and the
    torch default dtype. `check(scope, where, caller)` verifies a part of it ("core": what graders use
    most; "full"; "caller": what the code running in frame `caller` can look names up in) and reports any
    difference through `tamper`; `holds(obj)` tells whether `obj` is a sealed function, class or module.
    Until `take`, there is nothing to verify.

    Where dicts carry version tags (`_dict_versions`), each namespace's tag is recorded with its copy: one
    whose tag is unchanged is unchanged, and needs no comparing. `export()` then gives what was taken, for a
    zygote's units (`prepare_seal`): a seal made with it as `base` takes only what changed since."""
    import functools
    import gc
    import warnings
    from operator import is_

    str_keys = _exact_str_keys()
    version = _dict_versions()
    loaded = sys.modules
    s_type, s_len, s_all, s_map, s_any, s_id, s_filter = type, len, all, map, any, id, filter
    s_str, s_int, s_float, s_list, s_tuple, s_dict, s_set = str, int, float, list, tuple, dict, set
    s_frozenset, s_sorted, s_callable, s_issubclass = frozenset, sorted, callable, issubclass
    s_staticmethod, s_classmethod, s_property = staticmethod, classmethod, property
    function_type, method_type, module_type, partial_type = (types.FunctionType, types.MethodType,
                                                             types.ModuleType, functools.partial)
    namespace_type = types.SimpleNamespace
    get_mro = type.__dict__["__mro__"].__get__
    get_type_dict = type.__dict__["__dict__"].__get__
    get_type_name = type.__dict__["__name__"].__get__
    is_class = type.__dict__["__instancecheck__"].__get__(type)  # isinstance(value, type), from C
    dict_get = s_dict.get
    get_referents, gc_isenabled, gc_enable, gc_disable = gc.get_referents, gc.isenabled, gc.enable, gc.disable
    catch_warnings, simplefilter = warnings.catch_warnings, warnings.simplefilter
    exception, value_error = Exception, ValueError
    missing = object()
    strict_names, strict_prefixes, core_names = _STRICT_NAMES, _STRICT_PREFIXES, s_frozenset(_CORE_MODULES)
    benign_additions = _BENIGN_ADDITIONS
    builtin_names = s_frozenset(vars(loaded["builtins"]))
    sealed = False
    # Entries: [namespace, its copy, strict, label, deep copies of its containers (strict only), is_class,
    #           the namespace's version tag (None: no tags), what reads it now]
    full: list = []
    core: list = []
    owners: dict = {}  # id(module or class) -> its entry, to verify what a caller can reach
    owners_by_dict: dict = {}  # id(its namespace) -> the same entry
    keep: list = []  # the (name, module) pairs sealed: what `owners` names, kept alive so that the ids stay theirs
    builtins_module = None
    get_default_dtype = default_dtype = None
    sealed_ids: list = []  # built on first use: the ids of every function and class reachable from the seal

    def copy_namespace(item) -> None:
        """(Re)take `item`'s copy of its namespace, and its tag now (read first: a change while copying shows)."""
        reader = item[7]
        item[6] = reader.value if reader is not None else None
        item[1] = item[0].copy()

    def unmoved(item) -> bool:
        """Whether `item`'s namespace still has the tag its copy was taken with (False where there are no tags)."""
        reader = item[7]
        return reader is not None and reader.value == item[6]

    def copy_into(item) -> None:
        """(Re)take `item`'s copies of its namespace and, if strict, of the containers bound there."""
        copy_namespace(item)
        deep = []
        if item[2]:
            for k, v in item[1].items():
                tv = s_type(v)
                if tv is s_dict:
                    deep.append((k, v, v.copy()))
                elif tv is s_list or tv is s_set:
                    deep.append((k, v, s_tuple(v)))
        item[4] = deep

    def add(owner, mapping, label, strict, is_core, is_class) -> None:
        if s_id(mapping) in owners_by_dict:
            return
        item = [mapping, None, strict, label, None, is_class, None, version(mapping) if version is not None else None]
        copy_into(item)
        full.append(item)
        owners[s_id(owner)] = item
        owners_by_dict[s_id(mapping)] = item
        if is_core:
            core.append(item)

    def add_classes(name: str, namespace: dict, strict: bool) -> None:
        """The classes bound in module `name`'s namespace (filtered at C speed: most values are not classes)."""
        cores = core_classes()
        for value in s_list(s_filter(is_class, s_list(namespace.values()))):
            mapping = value.__dict__
            owner = mapping.get("__module__", None)
            if s_type(owner) is s_str and owner != name and owner in loaded:
                continue  # re-exported: sealed with its own module
            real = get_referents(mapping)
            if real and s_type(real[0]) is s_dict:
                add(value, real[0], name + "." + s_str(get_type_name(value)), strict,
                    strict or s_any(value is c for c in cores), True)

    def core_classes() -> list:
        found = []
        for owner, attr in (("torch", "Tensor"), ("torch.nn", "Module"), ("torch.nn", "Parameter")):
            module = loaded.get(owner)
            if module is not None and attr in module.__dict__:
                found.append(module.__dict__[attr])
        return found

    def add_module(name: str, module, graders: frozenset) -> None:
        strict = name in strict_names or name.startswith(strict_prefixes) or name in graders
        try:
            namespace = module.__dict__
        except exception:
            return
        add(module, namespace, name, strict, strict or name in core_names, False)
        add_classes(name, namespace, strict)

    def snapshot(modules: list, graders: frozenset) -> None:
        for name, module in modules:
            add_module(name, module, graders)
        keep.extend(modules)

    def adopt(modules: list, graders: frozenset) -> bool:
        """Start from `base`: every namespace whose tag changed since is copied again (a module's new
        classes added), every module loaded since is added. False (nothing adopted) where a module `base`
        holds is no longer loaded as it was."""
        now = s_dict(modules)
        if not s_all(dict_get(now, name, missing) is module for name, module in base.keep):
            return False
        full.extend(base.full)
        core.extend(base.core)
        owners.update(base.owners)
        owners_by_dict.update(base.owners_by_dict)
        for item in base.full:
            if not unmoved(item) or item[4]:  # changed, or strict (its containers may have changed)
                copy_into(item)
                if not item[5]:
                    add_classes(item[3], item[0], item[2])
        for name, module in modules:
            if name not in base.names:
                add_module(name, module, graders)
        keep.extend(modules)
        return True

    def take(modules: list, graders: frozenset, dtype_getter) -> None:
        nonlocal sealed, builtins_module, get_default_dtype, default_dtype
        if sealed:
            return
        enabled = gc_isenabled()
        gc_disable()  # a hundred thousand small objects: no reason to scan torch's million each time
        try:
            with catch_warnings():
                simplefilter("ignore")  # deprecated aliases (torch.distributed.reduce_op) warn
                if base is None or not adopt(modules, graders):
                    snapshot(modules, graders)
        finally:
            if enabled:
                gc_enable()
        builtins_module = loaded.get("builtins")
        get_default_dtype = dtype_getter
        if dtype_getter is not None:
            default_dtype = dtype_getter()
        sealed = True

    def unchanged(namespace: dict) -> bool:
        """Whether `namespace` is sealed and has not changed since its copy was taken."""
        item = dict_get(owners_by_dict, s_id(namespace))
        return item is not None and item[0] is namespace and unmoved(item)

    def export() -> types.SimpleNamespace:
        """What was taken, to start a later seal from (`base`): the modules sealed are `keep`."""
        return namespace_type(full=full, core=core, owners=owners, owners_by_dict=owners_by_dict, keep=keep,
                              names=s_frozenset(name for name, _ in keep), unchanged=unchanged)

    def callable_like(value) -> bool:
        t = s_type(value)
        if s_callable(value) or s_issubclass(t, module_type):
            return True
        return s_any("__get__" in get_type_dict(c) for c in get_mro(t))  # a descriptor (a property, say)

    def changes(entries) -> list:
        """The labels of what changed; refreshes entries whose only changes are allowed."""
        changed = []
        for item in entries:
            mapping, saved, strict, label, deep, is_class, _, reader = item
            for name, container, copy in deep:  # a strict namespace's containers: whatever became of the namespace
                if s_type(copy) is s_dict:
                    if s_len(container) != s_len(copy) or not s_all(s_map(is_, copy.values(), container.values())):
                        changed.append(label + "." + name)
                elif s_len(container) != s_len(copy) or not s_all(s_map(is_, copy, container)):
                    changed.append(label + "." + name)
            if unmoved(item) if reader is not None else (  # an unchanged tag: an unchanged namespace
                    s_len(mapping) == s_len(saved) and s_all(s_map(is_, saved.values(), mapping.values()))):
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
                if s_type(k) is s_str and k in benign_additions:
                    continue
                if strict or (is_class and callable_like(value)) or (not is_class and k in builtin_names):
                    bad.append(k)
            if bad:
                changed.extend(label + "." + s_str(k) for k in bad[:3])
            else:  # only allowed changes: they become the namespace's sealed state (its containers' copies stay)
                copy_namespace(item)
        if get_default_dtype is not None and get_default_dtype() is not default_dtype:
            changed.append("torch default dtype (torch.set_default_dtype)")
        return changed

    def reachable(caller) -> list:
        """The sealed namespaces the calling code can look names up in: its module's, the modules and
        classes its names and local variables refer to (and their bases)."""
        found, seen_ids = [], s_set()

        def take_one(obj):
            ident = s_id(obj)
            if ident in seen_ids:
                return
            seen_ids.add(ident)
            item = owners.get(ident)
            if item is not None:
                found.append(item)

        def take_type(cls):
            for base in get_mro(cls):
                take_one(base)

        f_globals = caller.f_globals
        item = owners_by_dict.get(s_id(f_globals))
        if item is not None and s_id(f_globals) not in seen_ids:
            seen_ids.add(s_id(f_globals))
            found.append(item)
        if not str_keys(f_globals):
            return found
        for name in caller.f_code.co_names:
            value = dict_get(f_globals, name, missing)
            if value is missing:
                continue
            t = s_type(value)
            if s_issubclass(t, s_type):
                take_type(value)
            else:
                take_one(value)
                take_type(t)
        for value in caller.f_locals.values():
            t = s_type(value)
            if s_issubclass(t, s_type):
                take_type(value)
            elif t is not s_int and t is not s_str and t is not s_float:
                take_one(value)
                take_type(t)
        if builtins_module is not None:
            take_one(builtins_module)
        return found

    def check(scope: str, where=None, caller=None) -> bool:
        """Verify the seal's `scope`; False (and tampering reported) when something changed."""
        if not sealed:
            return True
        # "caller": what the calling code can look names up in (the core is checked per result)
        changed = changes(reachable(caller) if scope == "caller" else full if scope == "full" else core)
        if changed:
            names = ", ".join(s_sorted(s_set(changed))[:5])
            tamper(f"your code changed what the graders rely on ({names}): the checks must run on torch, "
                   "pytest and the graders as they are", where)
            return False
        return True

    def holds(obj) -> bool:
        """Whether `obj` is a module, class or function the seal holds (bound in a sealed namespace, or
        behind one: a method's function, a property's, a decorator's wrapped function or closure)."""
        if not sealed:
            return False
        if s_id(obj) in owners:
            return True
        if not sealed_ids:
            found = s_set()
            pending = []
            for item in full:
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
                        except value_error:  # an empty cell
                            pass
                    pending.append(dict_get(value.__dict__, "__wrapped__", None))
                    pending.extend(value.__defaults__ or ())
                elif t is s_staticmethod or t is s_classmethod or t is method_type:
                    pending.append(value.__func__)
                elif t is s_property:
                    pending.extend((value.fget, value.fset, value.fdel))
                elif t is partial_type:
                    pending.append(value.func)
                elif s_issubclass(t, s_type):
                    found.add(s_id(value))
            sealed_ids.append(s_frozenset(found))
        return s_id(obj) in sealed_ids[0]

    return types.SimpleNamespace(take=take, check=check, holds=holds, export=export if version is not None else None)


# --------------------------------------------------------------------------------------------------
# The forbidden built-ins, refusals, the reference, the markers


def _function_mode(tamper) -> types.SimpleNamespace:
    """The torch function mode that makes this kata's forbidden built-ins raise, on torch's stack while
    the student's code runs: `arm((mode, push, pop, stack_len))` once (kata.configure; None when nothing
    is forbidden); `push` where the student's code is entered, `pop` where it returns, `clear` before a
    result is written."""
    mode = push_mode = pop_mode = stack_len = None
    pushed: list = []  # the stack's length after each push of ours

    def arm(config) -> None:
        nonlocal mode, push_mode, pop_mode, stack_len
        if config is not None:
            mode, push_mode, pop_mode, stack_len = config

    def push() -> None:
        if mode is None:
            return
        push_mode(mode)
        pushed.append(stack_len())

    def pop() -> None:
        if not pushed:
            return
        depth = pushed.pop()
        # Pop only our own mode at the depth we pushed it; anything else is left for verification.
        if stack_len() == depth:
            top = pop_mode()
            if top is not mode:
                push_mode(top)
                tamper("your code changed the torch function mode stack (a TorchFunctionMode of its own?)")

    def clear() -> None:
        while pushed:
            pop()

    return types.SimpleNamespace(arm=arm, push=push, pop=pop, clear=clear)


def _refusal(student_where, tamper):
    """`deny(message, report=, frame=)`: refuse what the code running in `frame` asked for (a C
    PermissionError: raising it runs none of the student's code), reporting it as tampering when asked."""
    permission_error = PermissionError

    def deny(message: str, *, report: bool, frame) -> None:
        where = student_where(frame)
        if report:
            tamper(message, where)
        raise permission_error("kata: " + message + (" (this attempt is reported)" if report else ""))

    return deny


def _reference_guard(who, tamper, deny) -> types.SimpleNamespace:
    """The current kata's reference solution is the graders': `store` keeps it (once), `fetch` hands it
    out. The student's code may run a piece of it only where a grader substituted that piece into their
    module (`substitute`); a class of theirs may not inherit its methods (`taint` marks such a class);
    `entered(frame)` is told each time the reference's code starts running. `check_student_module`
    verifies that no name of the student's module (`note_student_module`) is the reference's own code."""
    import functools

    REFERENCE_CODE, UNTRUSTED = _REFERENCE_CODE, _UNTRUSTED
    classify, student_on_stack, register = who.classify, who.student_on_stack, who.register
    str_keys = _exact_str_keys()
    s_type, s_id, s_any, s_list, s_set, s_frozenset, s_tuple = type, id, any, list, set, frozenset, tuple
    s_issubclass, s_staticmethod, s_classmethod, s_property = issubclass, staticmethod, classmethod, property
    function_type, method_type, partial_type = types.FunctionType, types.MethodType, functools.partial
    get_mro = type.__dict__["__mro__"].__get__
    get_type_dict = type.__dict__["__dict__"].__get__
    missing = object()
    student_name = "exercise"  # the name the plugin loads the student's module under (its classes' __module__)
    reference = student_module = None
    codes = classes = s_frozenset()  # ids of the reference's code objects and classes
    keep: list = []  # what `codes` and `classes` and `tainted` name, kept alive so that the ids stay theirs
    substituted: dict = {}
    tainted: set = set()

    def store(module, code_objects, reference_classes) -> None:
        nonlocal reference, codes, classes
        if reference is not None:
            return
        reference = module
        register(module.__dict__, REFERENCE_CODE)
        codes = s_frozenset(s_id(c) for c in code_objects)
        classes = s_frozenset(s_id(c) for c in reference_classes)
        keep.append((s_tuple(code_objects), s_tuple(reference_classes)))

    def fetch():
        return reference

    def note_student_module(module) -> None:
        nonlocal student_module
        student_module = module

    def substitute(name: str, value) -> None:
        substituted[name] = value

    def taint(cls) -> None:
        tainted.add(s_id(cls))
        keep.append(cls)

    def substituted_below(frame) -> bool:
        """Whether a reference function a grader substituted into the student's module is on the stack
        above the student's code (the student's code calling it, and it calling its own helpers)."""
        allowed = None
        while frame is not None:
            kind = classify(frame.f_code.co_filename)
            if kind in UNTRUSTED:
                return False
            if kind == REFERENCE_CODE:
                if allowed is None:
                    allowed = s_set()
                    if student_module is not None and str_keys(student_module.__dict__):
                        for name, value in s_list(substituted.items()):
                            if student_module.__dict__.get(name, missing) is value and s_type(value) is function_type:
                                allowed.add(s_id(value.__code__))
                if s_id(frame.f_code) in allowed:
                    return True
            frame = frame.f_back
        return False

    def entered(frame) -> None:
        """The reference's code starts running in `frame`: refused when the student's code called it
        (other than through a piece substituted into their module) or inherited it."""
        caller = frame.f_back
        if student_on_stack(caller) and not substituted_below(caller):
            deny("your code called the reference solution: write it yourself", report=True, frame=caller)
        if tainted:
            code = frame.f_code
            if code.co_argcount:
                first = frame.f_locals.get(code.co_varnames[0], missing)
                cls = first if s_issubclass(s_type(first), s_type) else s_type(first)
                if s_id(cls) in tainted:
                    deny("your class uses the reference solution's methods: write them yourself", report=True,
                         frame=frame)

    def is_reference(value, depth=0) -> bool:
        if depth > 3:
            return False
        t = s_type(value)
        if t is function_type:
            return s_id(value.__code__) in codes
        if t is method_type or t is s_staticmethod or t is s_classmethod:
            return is_reference(value.__func__, depth + 1)
        if t is s_property:
            return s_any(is_reference(f, depth + 1) for f in (value.fget, value.fset) if f is not None)
        if s_issubclass(t, s_type):
            return s_any(s_id(c) in classes for c in get_mro(value))
        if t is partial_type:
            return is_reference(value.func, depth + 1)
        return False

    def check_student_module(where=None) -> None:
        """The student's names must not be the reference solution's own code."""
        if student_module is None or (not codes and not classes):
            return
        namespace = student_module.__dict__
        if not str_keys(namespace):
            tamper("your module's namespace holds a key that is not a name", where)
            return
        for name, value in s_list(namespace.items()):
            if substituted.get(name, missing) is value:
                continue
            if is_reference(value):
                tamper(f"your {name} is the reference solution's, not your own code", where)
                return
            members = get_type_dict(value) if s_issubclass(s_type(value), s_type) else None
            if members is not None and str_keys(members) and members.get("__module__") is student_name:
                for attr, member in s_list(members.items()):
                    if is_reference(member):
                        tamper(f"your {name}.{attr} is the reference solution's, not your own code", where)
                        return

    return types.SimpleNamespace(
        store=store, fetch=fetch, note_student_module=note_student_module, substitute=substitute, taint=taint,
        entered=entered, check_student_module=check_student_module)


def _markers(who, seal, mode, reference, deny):
    """`marker(func, frame)` handles an entry/exit marker (see `instrument`) running in `frame`, False
    when `func` is not one. Where grading code calls into the student's code, whatever it called must
    still be the student's own function, not one planted where torch, a grader or pytest keeps theirs:
    the seal is verified for what the caller can reach, and the forbidden-built-in mode pushed; where the
    student's code returns to grading code, the mode is popped."""
    STUDENT_CODE, REFERENCE_CODE, UNTRUSTED = _STUDENT_CODE, _REFERENCE_CODE, _UNTRUSTED
    enter_token, leave_token, reference_token = ENTER, LEAVE, REFERENCE
    classify, first_outside_library = who.classify, who.first_outside_library
    check_seal, push_mode, pop_mode, reference_entered = seal.check, mode.push, mode.pop, reference.entered
    s_type, s_len, s_str = type, len, str

    def marker(func, frame) -> bool:
        defaults = func.__defaults__
        if defaults is None or s_len(defaults) != 1 or s_type(defaults[0]) is not s_str:
            return False
        token = defaults[0]
        if token != enter_token and token != leave_token and token != reference_token:
            return False
        if frame is None:
            return True
        kind = classify(frame.f_code.co_filename)
        if token == reference_token:
            if kind == REFERENCE_CODE:
                reference_entered(frame)
            return True
        if kind != STUDENT_CODE:
            return True
        if frame.f_code.co_name in ("__torch_function__", "__torch_dispatch__"):
            deny(f"{frame.f_code.co_name} overrides how torch computes (and how graders compare): "
                 "return plain tensors", report=True, frame=frame)
        outer = first_outside_library(frame.f_back)
        if outer is not None:
            outer_kind = classify(outer.f_code.co_filename)
            if outer_kind in UNTRUSTED:
                return True  # the student's code calling its own: not a boundary
        if token == enter_token:
            check_seal("caller", (frame.f_code.co_filename, frame.f_lineno), frame.f_back)
            push_mode()
        else:
            pop_mode()
        return True

    return marker


# --------------------------------------------------------------------------------------------------
# The path policy


def _path_policy(config: dict, results_channel) -> types.SimpleNamespace:
    """Which paths the student's code may open, list or change, from the course's layout (the config of
    kata.configure). Hidden: the graders and the reference solutions of this kata and later ones (by
    device and inode, under any name or link, and by path prefix), the progress file, the results channel
    (`results_channel`, a (device, inode)) and /proc. Not to be written: Python files, anything in the
    Python installation, the kata package, the graders or the solutions, and files in /dev/shm (memory
    the kata's limit would not count).

    `open_refusal(args)`, `listing_refusal(args)` and `change_refusal(event, args)` take an event's
    arguments and answer None when allowed, else the refusal: `(why, message, report)` for open,
    the message for a listing (always reported), `(message, report)` for a change."""
    os_stat, os_fstat, os_getcwd = os.stat, os.fstat, os.getcwd
    s_type, s_len, s_str, s_int, s_bytes = type, len, str, int, bytes
    s_set, s_frozenset, s_tuple = set, frozenset, tuple
    os_error, value_error, type_error = OSError, ValueError, TypeError
    import pathlib

    path_types = s_frozenset({pathlib.PurePosixPath, pathlib.PureWindowsPath, pathlib.PosixPath,
                              pathlib.WindowsPath, pathlib.Path, pathlib.PurePath})
    sep, code_suffixes, shared_memory_dirs = os.sep, _CODE_SUFFIXES, _SHARED_MEMORY_DIRS
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    unknown_path = object()

    def file_ids(paths) -> frozenset:
        """(device, inode) of each path that exists: a file is recognised under any name or link."""
        ids = s_set()
        for path in paths:
            try:
                st = os_stat(path)
                ids.add((st.st_dev, st.st_ino))
            except os_error:
                pass
        return s_frozenset(ids)

    hidden_ids = file_ids(config.get("protected_files", ())) | file_ids(config.get("protected_dirs", ()))
    hidden_prefixes = s_tuple(config.get("protected_prefixes", ()))
    progress_ids = file_ids(config.get("progress_files", ()))
    progress_prefixes = s_tuple(config.get("progress_files", ()))
    not_writable = s_tuple(config.get("writable_blocked", ()))
    try:
        proc_device = os_stat("/proc/self").st_dev
    except os_error:
        proc_device = None

    def path_of(value):
        """A str, bytes or int path as given; `unknown_path` for any other object (a path-like object of
        the student's could answer differently each time it is asked, and run code in here)."""
        t = s_type(value)
        if t is s_str or t is s_bytes or t is s_int:
            return value
        if t in path_types:
            return s_str(value)  # pathlib's own types: their code is sealed
        return unknown_path

    def absolute(path):
        text = path.decode("utf-8", "replace") if s_type(path) is s_bytes else path
        if not text.startswith(sep):
            text = os_getcwd() + sep + text
        return text

    def protected(path) -> str | None:
        """Why `path` is off limits to the student's code, or None."""
        if path is None:
            return None
        if path is unknown_path:
            return "unknown"
        try:
            st = os_fstat(path) if s_type(path) is s_int else os_stat(path)
        except (os_error, value_error, type_error):
            st = None
        if st is not None:
            ident = (st.st_dev, st.st_ino)
            if ident in progress_ids:
                return "progress"
            if ident in hidden_ids:
                return "hidden"
            if ident == results_channel:
                return "results"
            if st.st_dev == proc_device:
                return "proc"
        if s_type(path) is s_int:
            return None
        text = absolute(path)
        if text.startswith(progress_prefixes):
            return "progress"
        if text.startswith(hidden_prefixes):
            return "hidden"
        return None

    def write_blocked(path) -> bool:
        if path is None or path is unknown_path or s_type(path) is s_int:
            return False
        text = absolute(path)
        return text.endswith(code_suffixes) or text.startswith(not_writable)

    def open_refusal(args):
        path = path_of(args[0]) if args else None
        why = protected(path)
        if why == "hidden":
            return why, f"reading {s_str(path)} is not allowed: the graders and the reference solution are hidden", True
        if why == "progress":
            return why, (f"opening {s_str(path)} is not allowed: the progress file is kata's to write, after the "
                         "checks"), True
        if why == "results":
            return why, "the results of the checks are written by the graders only", True
        if why == "unknown":
            return why, "open() takes a str, bytes or pathlib path while your code is graded", False
        if why == "proc":
            return why, f"{s_str(path)}: /proc is not available while your code is graded", True
        mode = args[1] if s_len(args) > 1 else None
        flags = args[2] if s_len(args) > 2 else 0
        writing = (s_type(mode) is s_str and ("w" in mode or "a" in mode or "x" in mode or "+" in mode)) or (
            s_type(flags) is s_int and flags & write_flags)
        if writing and s_type(path) is not s_int and absolute(path).startswith(shared_memory_dirs):
            return "shared-memory", (f"writing {s_str(path)} is not allowed while your code is graded: files in "
                                     "/dev/shm are memory the kata's limit would not count"), True
        if writing and write_blocked(path):
            return "code", (f"writing {s_str(path)} is not allowed while your code is graded (no Python files, "
                            "nothing inside the Python installation or the course's graders and solutions)"), True
        return None

    def listing_refusal(args):
        path = path_of(args[0]) if args else None
        if path is not None and protected(path) is not None:
            return f"listing {s_str(path)} is not allowed: the graders and the reference solution are hidden"
        return None

    def change_refusal(event: str, args):
        for value in args[:2]:
            path = path_of(value)
            if path is not None and s_type(path) is not s_int and (
                    protected(path) is not None or write_blocked(path)):
                return f"{event} on {s_str(path)} is not allowed while your code is graded", True
        if event == "os.link" or event == "os.symlink":
            return f"{event} is not allowed while your code is graded", False
        return None

    return types.SimpleNamespace(open_refusal=open_refusal, listing_refusal=listing_refusal,
                                 change_refusal=change_refusal)


# --------------------------------------------------------------------------------------------------
# The routes and the dispatcher


def _plugin_commands(results, who, seal, mode, reference, markers, deny, start_new_thread, fork_exec) -> dict:
    """The routes of the kata package's own events, `{event: route(event, args, frame)}`. Most are the
    plugin's, obeyed only when the kata package raises them with none of the student's code on the stack;
    the others answer for themselves (tampering reported, threads and processes started for the kata
    package only, substitutions and taints noted, the stack sampled once). kata.configure builds the
    path policy and adds the routes of the system's events (`_system_routes`) to the same table: until
    then, those pass."""
    STUDENT_CODE = _STUDENT_CODE
    write, tamper = results.write, results.tamper
    in_kata, student_on_stack, student_where = who.in_kata, who.student_on_stack, who.student_where
    configure_who, register, classify = who.configure, who.register, who.classify
    take_seal, check_seal, arm_mode, clear_mode = seal.take, seal.check, mode.arm, mode.clear
    check_student_module, note_student_module = reference.check_student_module, reference.note_student_module
    store_reference, fetch_reference = reference.store, reference.fetch
    substitute, taint, push_mode, channel = reference.substitute, reference.taint, mode.push, results.channel
    build_path_policy, build_system_routes = _path_policy, _system_routes
    loaded = sys.modules
    s_type, s_str, s_list, s_frozenset, s_issubclass = type, str, list, frozenset, issubclass
    module_type, frame_type = types.ModuleType, types.FrameType
    configured = sampled = False
    get_default_dtype = None

    def plugin_only(command):
        def route(event: str, args, frame) -> None:
            if not in_kata(frame) or student_on_stack(frame):
                deny(f"{event} is for the grading plugin only", report=True, frame=frame)
            command(args)

        return route

    def on_result(args) -> None:
        name, fields = args
        if name in ("check", "end", "import"):
            clear_mode()
            check_student_module()
            check_seal("full" if name == "end" else "core")
        write(name, fields)

    def on_student(args) -> None:
        if args[0] == "enter":
            push_mode()
        elif args[0] == "module":
            note_student_module(args[1])
        elif args[0] == "globals":
            register(args[1], STUDENT_CODE)  # before any of its code runs: this namespace is the student's
        else:
            clear_mode()

    def on_verify(args) -> None:
        check_student_module()
        check_seal(args[0] if args else "core")

    def on_configure(args) -> None:
        nonlocal configured, get_default_dtype
        if configured:
            return
        config = args[0]
        configure_who(config)
        policy = build_path_policy(config, channel)
        arm_mode(config.get("mode"))
        get_default_dtype = config.get("get_default_dtype")
        routes.update(build_system_routes(who, policy, seal, markers, deny))
        configured = True

    def on_fetch_reference(args) -> None:
        args[0].append(fetch_reference())

    def on_store_reference(args) -> None:
        module, code_objects, reference_classes = args
        store_reference(module, code_objects, reference_classes)

    def on_seal(args) -> None:
        graders, extra = args
        modules = [(name, module) for name, module in s_list(loaded.items())
                   if s_issubclass(s_type(module), module_type)]
        take_seal(modules + s_list(extra), s_frozenset(graders), get_default_dtype)

    def on_sample(event, args, frame) -> None:
        # The parent's time budget ran out: write where the student's code is (their frames only), once. A
        # signal that comes while the hook is busy is not answered: the parent asks again a moment later.
        # Only a real frame: the handler can be called by the student's code with an object of theirs.
        nonlocal sampled
        stack = args[0] if args else None
        if sampled or s_type(stack) is not frame_type:
            return
        frames = []
        while stack is not None:
            if classify(stack.f_code.co_filename) == STUDENT_CODE:
                frames.append({"file": stack.f_code.co_filename, "line": stack.f_lineno,
                               "function": stack.f_code.co_name})
            stack = stack.f_back
        frames.reverse()
        sampled = True
        write("stack", {"frames": frames})

    def on_tamper(event, args, frame) -> None:
        tamper(args[0] if args and s_type(args[0]) is s_str else "tampering", student_where(frame))

    def on_thread(event, args, frame) -> None:
        if in_kata(frame) and not student_on_stack(frame.f_back):
            function, thread_args, kwargs, box = args
            box.append(start_new_thread(function, thread_args, kwargs))
            return
        deny("starting threads is not available while your code is graded", report=False, frame=frame)

    def on_fork_exec(event, args, frame) -> None:
        if fork_exec is not None and in_kata(frame) and not student_on_stack(frame.f_back):
            process_args, box = args
            box.append(fork_exec(*process_args))
            return
        deny("_posixsubprocess.fork_exec is not allowed while your code is graded (no processes)", report=True,
             frame=frame)

    def on_substitute(event, args, frame) -> None:
        # A grader puts a piece of the reference into the student's module (pytest's monkeypatch): the
        # student's code may then call it, as long as it stays there.
        if in_kata(frame) and not student_on_stack(frame.f_back):
            substitute(args[0], args[1])

    def on_taint(event, args, frame) -> None:
        # A subclass of a reference class is being made: by the student's code, it may not run the
        # reference's methods.
        if in_kata(frame) and student_on_stack(frame):
            taint(args[0])

    routes = {
        SAMPLE: on_sample, TAMPER: on_tamper, THREAD: on_thread, FORK_EXEC: on_fork_exec, SUBSTITUTE: on_substitute,
        TAINT: on_taint,
        RESULT: plugin_only(on_result), STUDENT: plugin_only(on_student), VERIFY: plugin_only(on_verify),
        FETCH_REFERENCE: plugin_only(on_fetch_reference), STORE_REFERENCE: plugin_only(on_store_reference),
        CONFIGURE: plugin_only(on_configure), SEAL: plugin_only(on_seal),
    }
    return routes


def _system_routes(who, paths, seal, markers, deny) -> dict:
    """The routes of the system's events, `{event: route(event, args, frame)}`: what code may do while
    the student's code is on the stack or runs (see the module's docstring). Trusted code on its own is
    never stopped. Every ctypes event goes to the route under "ctypes."."""
    TRUSTED_CODE, OTHER_CODE, UNTRUSTED = _TRUSTED_CODE, _OTHER_CODE, _UNTRUSTED
    classify, student_on_stack, in_kata = who.classify, who.student_on_stack, who.in_kata
    for_library, within, called_by_kata = who.for_library, who.within, who.called_by_kata
    open_refusal, listing_refusal, change_refusal = paths.open_refusal, paths.listing_refusal, paths.change_refusal
    holds, marker = seal.holds, markers
    os_getpid = os.getpid
    os_getpgid = getattr(os, "getpgid", lambda pid: -1)
    s_type, s_len, s_issubclass, s_str, s_int = type, len, issubclass, str, int
    function_type, code_type = types.FunctionType, types.CodeType
    frame_attributes, setattr_targets = _FRAME_ATTRIBUTES, _SETATTR_TARGETS
    frame_helpers, stack_text, line_cache = _FRAME_HELPERS, _STACK_TEXT, _LINE_CACHE
    code_helpers, compilers, unaudited_modules = _CODE_HELPERS, _COMPILERS, _UNAUDITED_MODULES
    code_readers = _CODE_READERS
    reported_processes = frozenset({"os.kill", "os.killpg", "signal.pthread_kill", "resource.setrlimit",
                                    "resource.prlimit"})
    reported_introspection = frozenset({"object.__setattr__", "object.__delattr__", "sys.addaudithook"})

    # An event's arguments can be anything when the student's code raises it with sys.audit: only plain
    # values are compared or hashed here, or a method of theirs would run while the hook looks away.
    def plain_str(value):
        """`value` as an exact str (a copy made by str's own C code for a subclass), None if no str."""
        return s_str.__str__(value) if s_issubclass(s_type(value), s_str) else None

    def kind(frame) -> int:
        return classify(frame.f_code.co_filename) if frame is not None else TRUSTED_CODE

    def involved(frame) -> bool:
        """Whether code other than trusted code raised the event, or the student's code is on the stack."""
        return kind(frame) != TRUSTED_CODE or student_on_stack(frame)

    def on_attribute(event, args, frame) -> None:
        # A read that hands out a frame or a code object; markers are read as `__code__`.
        name = plain_str(args[1]) if s_len(args) > 1 else None
        if name not in frame_attributes:
            return
        if name == "__code__" and s_type(args[0]) is function_type and marker(args[0], frame):
            return
        if in_kata(frame):
            return  # the guard and this toolkit look at frames; they never hand one out
        if name == "__code__" and frame is not None and (frame.f_code.co_filename, frame.f_code.co_name) in \
                code_readers:
            return  # inspect.signature (for a dataclass, say): it returns a signature, not the code
        if kind(frame) == OTHER_CODE or student_on_stack(frame):
            deny(f"reading {name} is not allowed while your code is graded (stack frames and code "
                 "objects belong to the graders)", report=False, frame=frame)

    def on_ctypes(event, args, frame) -> None:
        immediate = kind(frame)
        if immediate in UNTRUSTED or student_on_stack(frame):
            deny("ctypes is not allowed while your code is graded", report=True, frame=frame)

    def on_open(event, args, frame) -> None:
        if not involved(frame):
            return
        refusal = open_refusal(args)
        if refusal is not None:
            why, message, report = refusal
            # linecache quoting a hidden file in a library's text about its own callers gets no lines, like
            # any unreadable file; the student's code asking is tampering.
            deny(message, report=report and not (why == "hidden" and for_library(frame, line_cache)), frame=frame)

    def on_listing(event, args, frame) -> None:
        if not involved(frame):
            return
        message = listing_refusal(args)
        if message is not None and not called_by_kata(frame):
            deny(message, report=True, frame=frame)

    def on_change(event, args, frame) -> None:
        if not involved(frame):
            return
        refusal = change_refusal(event, args)
        if refusal is not None:
            message, report = refusal
            deny(message, report=report, frame=frame)

    def on_process(event, args, frame) -> None:
        if not involved(frame):
            return
        target = args[0] if args and s_type(args[0]) is s_int else None
        if event == "signal.pthread_kill" or (event == "os.kill" and target == os_getpid()) or (
                event == "os.killpg" and target == os_getpgid(0)):
            return  # the grading process signalling itself: a crash, never a pass
        deny(f"{event} is not allowed while your code is graded (no processes, signals or limits)",
             report=event in reported_processes, frame=frame)

    def on_code(event, args, frame) -> None:
        immediate = kind(frame)
        if immediate == TRUSTED_CODE and not student_on_stack(frame):
            return
        if immediate == TRUSTED_CODE and frame.f_code.co_filename.endswith(code_helpers):
            code = args[0] if args else None
            if s_type(code) is code_type and classify(code.co_filename) == OTHER_CODE:
                deny(f"importing {code.co_filename} is not available while your code is graded: keep your "
                     "code in the exercise file", report=False, frame=frame)
            return
        if immediate == TRUSTED_CODE and within(frame, compilers):
            deny("torch.compile is not available while your code is graded: the checks grade your code as "
                 "written, so leave torch.compile out", report=False, frame=frame)
        deny(f"{'compiling' if event == 'compile' else 'running'} code at run time (exec, eval, compile) "
             "is not allowed while your code is graded", report=False, frame=frame)

    def on_import(event, args, frame) -> None:
        name = plain_str(args[0]) if args else None
        if name in unaudited_modules and involved(frame):
            deny(f"importing {name} anew is not allowed while your code is graded (no processes, no shared "
                 "memory)", report=True, frame=frame)

    def on_channel(event, args, frame) -> None:
        if not involved(frame):
            return
        what = "memory mappings (mmap)" if event == "mmap.__new__" else "sockets (no network)"
        deny(f"{event}: {what} are not allowed while your code is graded", report=event == "mmap.__new__",
             frame=frame)

    def on_introspection(event, args, frame) -> None:
        if kind(frame) == TRUSTED_CODE:
            if not student_on_stack(frame):
                return
            filename = frame.f_code.co_filename
            if event == "sys._getframe" and (filename.endswith(frame_helpers) or in_kata(frame)
                                             or for_library(frame, stack_text)):
                return
            if event in ("marshal.loads", "marshal.load") and filename.startswith("<frozen importlib"):
                return
            if event == "object.__setattr__" and s_len(args) > 1 and (
                    plain_str(args[1]) in ("__module__", "__qualname__", "__name__", "__doc__", "__annotations__")
                    or (s_issubclass(s_type(args[0]), setattr_targets) and not holds(args[0]))):
                return
        deny(f"{event} is not allowed while your code is graded", report=event in reported_introspection,
             frame=frame)

    routes = {"object.__getattr__": on_attribute, "ctypes.": on_ctypes, "open": on_open, "os.open": on_open,
              "compile": on_code, "exec": on_code, "import": on_import}
    for events, route in ((_LISTINGS, on_listing), (_PATH_WRITES, on_change), (_PROCESSES, on_process),
                          (_CHANNELS, on_channel), (_INTROSPECTION, on_introspection)):
        routes.update(dict.fromkeys(events, route))
    return routes


def _dispatcher(routes: dict):
    """The audit hook itself: each event goes to its route in `routes` (every ctypes event to the one under
    "ctypes."); any other passes untouched. The hook's own work raises audit events too (reading
    attributes, looking at frames): those are not its business, so a thread already in the hook passes."""
    import _thread

    get_ident, getframe, routes_get = _thread.get_ident, sys._getframe, routes.get
    busy: set = set()  # threads inside the hook

    def hook(event, args):
        route = routes_get(event)
        if route is None:
            if not event.startswith("ctypes."):
                return
            route = routes_get("ctypes.")
            if route is None:
                return
        ident = get_ident()
        if ident in busy:
            return
        busy.add(ident)
        try:
            route(event, args, getframe(1))  # 0 this hook, 1 the code that raised the event
        finally:
            busy.discard(ident)

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
