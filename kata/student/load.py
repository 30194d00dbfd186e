"""The student's module, made from the source the judge sent, and the pieces of earlier katas it imports.

The student's process reads no file of the course: the judge sends the student's source and the reference
sources of the katas before this one (what `from kata.earlier.<slug> import ...` gives while grading,
`kata.earlier`), so the course folder can be hidden from it or unreadable to its user. Its frames and
source lines are the student's file's, named by the path the judge gave.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import io
import linecache
import sys
import types

EARLIER = "kata.earlier"  # the package whose modules the judge sends

STUDENT_MODULE = "exercise"


class CappedStream(io.TextIOBase):
    """Text written to it, up to `limit` characters; the rest counted."""

    def __init__(self, limit: int):
        self.limit = limit
        self.kept: list[str] = []
        self.size = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        text = str(text)
        room = self.limit - self.size
        if room > 0:
            self.kept.append(text[:room])
            self.size += min(len(text), room)
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def text(self) -> str:
        out = "".join(self.kept)
        if self.dropped:
            out += f"\n… {self.dropped:,} more characters not shown"
        return out


class _Given(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`kata.earlier.<name>` from the sources the judge sent, and nothing else of `kata.earlier`."""

    def __init__(self, sources: dict[str, tuple[str, str]], current: str):
        self.sources, self.current = sources, current

    def find_spec(self, fullname, path, target=None):
        prefix = EARLIER + "."
        if not fullname.startswith(prefix):
            return None
        name = fullname[len(prefix):]
        if name not in self.sources:
            raise ImportError(f"kata {self.current} cannot import {fullname}: only the katas before it are given",
                              name=fullname)
        return importlib.util.spec_from_loader(fullname, self, origin=self.sources[name][0])

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        filename, source = self.sources[module.__name__.rsplit(".", 1)[-1]]
        module.__file__ = filename
        remember(filename, source)
        exec(compile(source, filename, "exec", dont_inherit=True), module.__dict__)


def give_earlier(sources: dict[str, tuple[str, str]], current: str) -> None:
    """Resolve `kata.earlier.*` from `sources` (module name -> (file name, source)) from now on, and only
    from them: the package's own finder (which reads the course's files) is taken out."""
    importlib.import_module(EARLIER)  # its finder installs itself on import: installed now, then taken out
    for name in [n for n in sys.modules if n.startswith(EARLIER + ".")]:
        del sys.modules[name]
    sys.meta_path[:] = [_Given(sources, current),
                        *(f for f in sys.meta_path if type(f).__module__ != EARLIER and not isinstance(f, _Given))]


def remember(filename: str, source: str) -> None:
    """Tracebacks and warnings read source lines through linecache: give it the text, not the disk."""
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)


def load_student(source: str, filename: str) -> types.ModuleType:
    """Run the student's source as the module `exercise`; whatever it raises propagates."""
    remember(filename, source)
    code = compile(source, filename, "exec", dont_inherit=True)
    module = types.ModuleType(STUDENT_MODULE)
    module.__file__ = filename
    sys.modules[STUDENT_MODULE] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(STUDENT_MODULE, None)
        raise
    return module


def student_frames(tb, files: frozenset[str]) -> list[dict]:
    """A traceback's frames in `files` only (outermost first): where in the student's code it happened."""
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in files:
            frames.append({"file": code.co_filename, "line": tb.tb_lineno, "function": code.co_name})
        tb = tb.tb_next
    return frames


def stack_frames(frame, files: frozenset[str]) -> list[dict]:
    """The frames of a running stack in `files`, outermost first."""
    frames = []
    while frame is not None:
        if frame.f_code.co_filename in files:
            frames.append({"file": frame.f_code.co_filename, "line": frame.f_lineno, "function": frame.f_code.co_name})
        frame = frame.f_back
    return frames[::-1]
