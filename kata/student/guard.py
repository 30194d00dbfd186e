"""Forbidden built-ins made to raise while the student's code calls them: advice, in the student's process.

The trusted check is the source scan (`kata.grading.scan`), done before anything runs. This guard runs in
the student's own process, which can undo it, so it decides no grade by itself: it names the line of an
honest mistake that reading could not see (a name built at run time). Two layers, both deciding who
called by looking at the stack (the first frame outside torch, the standard library, site-packages and
the kata package):

- each forbidden name from `course.toml` is replaced by a wrapper (for a class, its `__init__`), so
  Python-level aliases are caught: `getattr(torch, "soft" + "max")`, `F.__dict__["softmax"]`,
  `nn.Softmax()(x)`, torch's own code calling it for the student (`torch.distributions`...);
- while the student's code runs, a torch function mode (`ForbiddenMode`) sees every torch call made
  from Python, C-level aliases included: `torch._C._VariableFunctions.softmax`,
  `torch._C.TensorBase.softmax(x)`, `torch._VF.softmax`, `torch.ops.aten._softmax.default`,
  `torch.special.softmax`, `torch.sparse.softmax`. It matches by the function's name, normalised
  (`_softmax.default`, `special_softmax` and `native_layer_norm` all count as what they are).

A call is the student's when that first frame is in the student's file (or other code the student made).
The reference pieces of earlier katas (`kata.earlier`) keep using the real thing.
"""

from __future__ import annotations

import contextlib
import importlib
import linecache
import os
import sys
import sysconfig

import torch
from torch.overrides import TorchFunctionMode

from kata.grading.scan import normalise  # one normalisation for the source scan and the run-time guard

_LIBRARY_DIRS = tuple(dict.fromkeys(
    os.path.dirname(path) + os.sep for path in (torch.__file__, sysconfig.get_paths()["stdlib"] + "/x",
                                                sysconfig.get_paths()["purelib"] + "/x",
                                                sysconfig.get_paths()["platlib"] + "/x")))
_KATA_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep


class ForbiddenBuiltin(Exception):
    """The student's code called a built-in this kata asks them to write themselves."""

    def __init__(self, name: str, file: str, line: int):
        self.name, self.file, self.line = name, file, line
        code = linecache.getline(file, line).strip()
        super().__init__(f"{name} is forbidden in this kata (called at {file}:{line}: {code})")


class _Who:
    """Classifies code by file: the student's, or trusted (libraries, the kata package, earlier katas' pieces)."""

    def __init__(self, student_files=(), trusted_files=()):
        self.student_files = frozenset(student_files)
        self.trusted_files = frozenset(trusted_files)

    def is_student(self, filename: str) -> bool:
        """The student's file, or code made at run time in the student's process (`exec`, `compile`:
        "<string>"), which only the student's code makes there; not Python's frozen modules."""
        return filename in self.student_files or not (
            filename.startswith(("<frozen", _KATA_DIR, *_LIBRARY_DIRS)) or filename in self.trusted_files)

    def offender(self, frame) -> tuple[str, int] | None:
        """(file, line) of the student's code that made this call, or None when it is not the student's
        (looking through library frames)."""
        while frame is not None and frame.f_code.co_filename.startswith(_LIBRARY_DIRS):
            frame = frame.f_back
        if frame is None or not self.is_student(frame.f_code.co_filename):
            return None
        return frame.f_code.co_filename, frame.f_lineno


_who = _Who()


def configure(student_files, trusted_files=()) -> None:
    """Say which files are the student's, and which others are trusted (earlier katas' pieces), before `arm`."""
    global _who
    _who = _Who(student_files, trusted_files)


def resolve(dotted: str):
    """(owner, attribute, object) for a dotted name like `torch.nn.functional.softmax` or `torch.ops.aten.x`."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:-1]:
            owner = getattr(owner, part)
        return owner, parts[-1], getattr(owner, parts[-1])
    raise ImportError(dotted)


def _guarded(name: str, original):
    # No functools.wraps: it would leave the original in `__wrapped__`, one attribute away.
    def guarded(*args, **kwargs):
        where = _who.offender(sys._getframe(1))
        if where is not None:
            raise ForbiddenBuiltin(name, *where)
        return original(*args, **kwargs)

    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        with contextlib.suppress(AttributeError, TypeError):
            setattr(guarded, attr, getattr(original, attr))
    return guarded


class ForbiddenMode(TorchFunctionMode):
    """Pushed while the student's code runs: refuses forbidden torch functions by (normalised) name."""

    def __init__(self, names: dict[str, str]):
        super().__init__()
        self.names = names
        # func -> its forbidden name, or None: a run calls a few hundred functions tens of thousands of times
        self.labels: dict = {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        try:
            label = self.labels[func]
        except (KeyError, TypeError):  # TypeError: a callable that cannot be a key
            label = self.names.get(normalise(getattr(func, "__name__", "") or ""))
            with contextlib.suppress(TypeError):
                self.labels[func] = label
        if label is not None:
            where = _who.offender(sys._getframe(1))
            if where is not None:
                module = getattr(func, "__module__", None) or ""
                called = f"{module}.{getattr(func, '__name__', func)}"
                named = label if called == label or not module.startswith("torch") else f"{called} (that is {label})"
                raise ForbiddenBuiltin(named, *where)
        return func(*args, **(kwargs or {}))


def arm(forbidden: tuple[str, ...] | list[str]) -> list[str]:
    """Guard every forbidden name; returns the names that could not be guarded (and why)."""
    unguarded = []
    for name in forbidden:
        try:
            owner, attr, target = resolve(name)
            if isinstance(target, type):
                target.__init__ = _guarded(name, target.__init__)
            else:
                setattr(owner, attr, _guarded(name, target))
        except (ImportError, AttributeError, TypeError) as exc:
            unguarded.append(f"{name}: {type(exc).__name__}: {exc}")
    return unguarded


def forbidden_mode(forbidden: tuple[str, ...] | list[str]) -> ForbiddenMode | None:
    """The mode refusing `forbidden` functions (classes are guarded by `arm`), or None if there are none."""
    names: dict[str, str] = {}
    for name in forbidden:
        leaf = name.rsplit(".", 1)[-1]
        if leaf[:1].isupper():
            continue  # a class: its __init__ is guarded
        names.setdefault(normalise(leaf), name)
    return ForbiddenMode(names) if names else None
