"""Pieces built in earlier katas: `from kata.earlier.layer_norm import LayerNorm`.

`kata.earlier.<slug with underscores>` is the module of that kata. Which file it is depends on who
runs the code:

- you (running your exercise, your notebook, `kata train-demo`): your own
  `exercises/<id>-<slug>/exercise.py`, because you are building your own Transformer;
- the grader (`kata check`, `kata verify`, nbgrader): the reference `solutions/<id>-<slug>/solution.py`,
  so that a mistake in kata 9.4 costs points in 9.4 only.

The grader sets `KATA_EARLIER=reference`; anything else means your own files. While kata N is graded
(`KATA_CURRENT=N`), only katas before N can be imported: a kata cannot import its own reference.
`with resolving(REFERENCE): ...` switches within one process (`kata viz` draws with your pieces, or the
reference's when yours are not ready).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import os
import sys
from pathlib import Path

from kata.course import COURSE_FILE, Course, CourseError, find_course_root, load_course

MODE_VARIABLE = "KATA_EARLIER"
CURRENT_VARIABLE = "KATA_CURRENT"
REFERENCE = "reference"
OWN = "own"


def mode() -> str:
    return REFERENCE if os.environ.get(MODE_VARIABLE) == REFERENCE else OWN


@contextlib.contextmanager
def resolving(as_mode: str):
    """Inside the block, `kata.earlier.*` imports resolve as `as_mode` (OWN or REFERENCE), imported afresh.

    Modules are cached by name, so without this a process that imported your 9.3 would hand it to the
    reference 9.4 too. What was imported before the block is put back after it, and the block's own
    imports are dropped: the two sets of pieces never meet."""
    prefix = __name__ + "."
    before = {name: sys.modules.pop(name) for name in list(sys.modules) if name.startswith(prefix)}
    previous_mode = os.environ.get(MODE_VARIABLE)
    os.environ[MODE_VARIABLE] = as_mode
    try:
        yield
    finally:
        for name in [n for n in sys.modules if n.startswith(prefix)]:
            del sys.modules[name]
        sys.modules.update(before)
        if previous_mode is None:
            os.environ.pop(MODE_VARIABLE, None)
        else:
            os.environ[MODE_VARIABLE] = previous_mode


class _EarlierFinder(importlib.abc.MetaPathFinder):
    def __init__(self):
        # course.toml's identity (path, change time, size, inode) and the course read from it: a grading unit
        # resolves up to eight modules, and reading the course again for each was most of what they cost.
        self._read: tuple[tuple, Course] | None = None

    def _course(self) -> Course:
        try:
            return self._load(find_course_root())
        except CourseError:
            # Run from outside the course (an editor's "run file" button, say): use the course this
            # package was installed from.
            return self._load(Path(__file__).resolve().parents[2])

    def _load(self, root: Path) -> Course:
        """The course at `root`, read again only when its course.toml has changed."""
        file = root / COURSE_FILE
        try:
            stat = file.stat()
        except OSError:
            return load_course(root)  # raises CourseError, naming the problem
        identity = (str(file), stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if self._read is None or self._read[0] != identity:
            self._read = (identity, load_course(root))
        return self._read[1]

    def find_spec(self, fullname, path, target=None):
        prefix = __name__ + "."
        if not fullname.startswith(prefix) or "." in fullname[len(prefix):]:
            return None
        name = fullname[len(prefix):]
        course = self._course()
        kata = next((k for k in course.katas if k.module_name == name), None)
        if kata is None:
            known = ", ".join(k.module_name for k in course.katas)
            raise ImportError(f"no kata named {name!r} in {course.file} (known: {known})", name=fullname)
        current = os.environ.get(CURRENT_VARIABLE)
        if current:
            graded = course.find(current)
            if course.index(kata) >= course.index(graded):
                raise ImportError(
                    f"kata {graded.id} cannot import {fullname}: only the katas before it are given "
                    f"(kata {kata.id} is not)", name=fullname)
        file = kata.solution if mode() == REFERENCE else kata.exercise
        return importlib.util.spec_from_file_location(fullname, file)


if not any(isinstance(finder, _EarlierFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _EarlierFinder())
