"""Running the student's own code inside the `kata` process (`kata train-demo`, `kata viz`).

`kata check` runs student code in a guarded child process and reports on it. These commands instead
import the student's files into the `kata` process itself, to show the student's own modules at work;
when something of theirs raises, one message names the kata, the file and the line (the deepest
traceback frame in a course file), never a traceback:

    module = load_kata_file(course, kata, kata.exercise, needs=("MultiHeadAttention",))
    try:
        ...                                   # use the student's module
    except Exception as exc:
        raise explain(exc, "drawing your attention failed", course) from None
"""

from __future__ import annotations

import contextlib
import importlib.util
import linecache
import os
import sys
from pathlib import Path
from types import ModuleType

from kata.course import Course, Kata
from kata.cpus import usable_cpus


class CodeError(Exception):
    """Something of the student's could not run; the message says what and where."""


def student_frame(exc: BaseException, course: Course):
    """(kata, path shown, line, function, code) of the deepest traceback frame in a course file, or None."""
    files = {str(k.exercise.resolve()): k for k in course.katas}
    files.update({str(k.solution.resolve()): k for k in course.katas})
    found = None
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        kata = files.get(str(Path(code.co_filename).resolve()))
        if kata is not None:
            path = Path(code.co_filename).resolve()
            shown = path.relative_to(course.root) if path.is_relative_to(course.root) else path
            found = (kata, shown, tb.tb_lineno, code.co_qualname, linecache.getline(code.co_filename,
                                                                                 tb.tb_lineno).strip())
        tb = tb.tb_next
    return found


def explain(exc: BaseException, doing: str, course: Course) -> CodeError:
    """A CodeError saying what `doing` ran into: a piece not implemented yet, or an exception, with the
    student's file:line and the `kata check` that tells more."""
    frame = student_frame(exc, course)
    where = f" ({frame[1]}:{frame[2]}, in {frame[3]}: {frame[4]})" if frame else ""
    # The stub's own raise, not a NotImplementedError of torch's ("bitwise_and_cpu" not implemented for 'Float').
    if isinstance(exc, NotImplementedError) and (frame is None or frame[4].startswith("raise NotImplementedError")):
        if frame:
            return CodeError(f"{doing}: {frame[3]} of kata {frame[0].id} is not implemented yet{where}. Finish it "
                             f"first: `kata check {frame[0].id}` says what is missing.")
        return CodeError(f"{doing}: a piece is not implemented yet. `kata check` says what is missing.")
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    hint = f" `kata check {frame[0].id}` may tell you more." if frame else ""
    return CodeError(f"{doing}: {text}{where}.{hint}")


@contextlib.contextmanager
def _no_bytecode():
    """No bytecode for the student's files (nor the earlier katas' they import): no __pycache__ in their
    folders, and never stale bytecode for a file saved twice within a second at the same size."""
    before = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        yield
    finally:
        sys.dont_write_bytecode = before


def load_kata_file(course: Course, kata: Kata, file: Path, needs: tuple[str, ...]) -> ModuleType:
    """Import `file` (the kata's exercise, or its solution) as a fresh module that has the callables `needs` names.

    Its `kata.earlier.*` imports resolve as usual (your own files unless KATA_EARLIER=reference; see
    `kata.earlier.resolving`). Raises CodeError naming the file and line when it cannot be imported."""
    own = file == kata.exercise
    who = f"your kata {kata.id} exercise" if own else f"the reference solution of kata {kata.id}"
    spec = importlib.util.spec_from_file_location(f"kata_{'own' if own else 'reference'}_{kata.module_name}", file)
    module = importlib.util.module_from_spec(spec)
    try:
        with _no_bytecode():
            spec.loader.exec_module(module)
    except FileNotFoundError:
        fix = f" (`kata reset {kata.id}` puts the stub back)" if own else ""
        raise CodeError(f"{file} does not exist{fix}") from None
    except SyntaxError as exc:
        raise CodeError(f"{who} has a syntax error: {exc.msg} ({exc.filename}:{exc.lineno})") from None
    except Exception as exc:
        raise explain(exc, f"importing {who} failed", course) from None
    missing = [name for name in needs if not callable(getattr(module, name, None))]
    if missing:
        raise CodeError(f"{who} has no {', '.join(missing)} ({file})")
    return module


def load_reference(course: Course, kata: Kata, needs: tuple[str, ...] = ()) -> ModuleType:
    """The kata's reference solution, built on the reference pieces of the katas before it (whatever
    `kata.earlier` resolves to elsewhere in this process)."""
    from kata import earlier

    with earlier.resolving(earlier.REFERENCE):
        return load_kata_file(course, kata, kata.solution, needs)


def use_check_threads() -> None:
    """As many torch threads as `kata check` gives the grading process (half the cores), unless OMP_NUM_THREADS
    says otherwise: for the course's small models more threads mostly wait for each other, and timings
    compare with the checks'."""
    import torch  # here, not at the top: the `kata` command keeps torch out of its own start-up

    if "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(max(1, usable_cpus() // 2))
