"""Forbidden built-ins made to raise while the student's code calls them.

Each forbidden name from `course.toml` is replaced by a wrapper (for a class, its `__init__`) that
looks at who called it: the first frame outside torch and the standard library. If that frame is in
the student's file, it raises `ForbiddenBuiltin` naming the line; if it is a grader or a reference
solution, the original runs. So aliases (`getattr(torch, "soft" + "max")`, `F.__dict__["softmax"]`,
`nn.Softmax()(x)`) are caught, while graders and the reference pieces of earlier katas keep using
the real thing.
"""

from __future__ import annotations

import functools
import importlib
import linecache
import os
import sys
import sysconfig

import torch

_LIBRARY_DIRS = tuple(
    os.path.dirname(path) + os.sep for path in (torch.__file__, sysconfig.get_paths()["stdlib"] + "/x")
)


class ForbiddenBuiltin(Exception):
    """The student's code called a built-in this kata asks them to write themselves."""

    def __init__(self, name: str, file: str, line: int):
        self.name, self.file, self.line = name, file, line
        code = linecache.getline(file, line).strip()
        super().__init__(f"{name} is forbidden in this kata (called at {file}:{line}: {code})")


def resolve(dotted: str):
    """(owner, attribute, object) for a dotted name like `torch.nn.functional.softmax`."""
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


def _student_caller(student_files: frozenset[str]):
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_LIBRARY_DIRS):
        frame = frame.f_back
    if frame is not None and frame.f_code.co_filename in student_files:
        return frame
    return None


def _guarded(name: str, original, student_files: frozenset[str]):
    @functools.wraps(original)
    def guarded(*args, **kwargs):
        frame = _student_caller(student_files)
        if frame is not None:
            raise ForbiddenBuiltin(name, frame.f_code.co_filename, frame.f_lineno)
        return original(*args, **kwargs)

    return guarded


def arm(forbidden: tuple[str, ...] | list[str], student_files: set[str]) -> list[str]:
    """Guard every forbidden name; returns the names that could not be guarded (and why)."""
    files = frozenset(student_files)
    unguarded = []
    for name in forbidden:
        try:
            owner, attr, target = resolve(name)
            if isinstance(target, type):
                target.__init__ = _guarded(name, target.__init__, files)
            else:
                setattr(owner, attr, _guarded(name, target, files))
        except (ImportError, AttributeError, TypeError) as exc:
            unguarded.append(f"{name}: {type(exc).__name__}: {exc}")
    return unguarded
