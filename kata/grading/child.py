"""The judge's process: `python -m kata.grading.child KATA_ID STUDENT_FILE RESULTS [options] [pytest args]`.

Started by `kata.runner` (cold, or forked from a warm zygote, `kata.grading.zygote`), never by hand. It forks
the student's process first (`kata.grading.spawn`: before any grader, reference or hidden module is
loaded here), then runs the kata's graders under pytest with the kata plugin, which asks the student's
process for what it needs and writes every result itself (`kata.grading.protocol`): `RESULTS` is a file
path, or `fd:N`, a pipe the parent reads. No line of the student's code runs in this process.
`--kata-graders=DIR` (first of the extra arguments) runs the graders in DIR instead of the kata's own
`graders/<id>-<slug>/`: an nbgrader notebook carries its graders in its hidden tests.

Before anything else it starts watching `--kata-lifeline-fd=N`, a pipe the parent holds open (the judge
ends with its process group when the parent is gone, and the student's process with it). The student's
process gets the kata's memory limit (`--kata-memory-mb=N`) and time budget (`--kata-budget=S`, counted
from when the student's file is run).
"""

from __future__ import annotations

import os
import signal
import sys
import threading

from kata.grading import spawn, zygote
from kata.grading.plugin import DEFAULT_OUTPUT_LIMIT

GRADERS_OPTION = "--kata-graders="
# Plugins the graders do not need: fewer to import. (assertion: plain asserts, since a rewritten assert would
# print grader source.)
UNUSED_PLUGINS = ("assertion", "cacheprovider", "faulthandler", "warnings", "logging", "junitxml", "doctest",
                  "pastebin", "stepwise", "setuponly", "setupplan", "unittest", "debugging", "legacypath",
                  "unraisableexception", "threadexception", "subtests")


def pytest_args(kata, graders: str, extra: list[str]) -> list[str]:
    disabled = [arg for name in UNUSED_PLUGINS for arg in ("-p", f"no:{name}")]
    return [
        graders,
        f"--kata-id={kata.id}",
        "-c", os.devnull,  # the course's own pytest settings are for its test suite, not for graders
        f"--rootdir={graders}",
        "-q", "-s", "--tb=native", *disabled,  # native: pytest's own tracebacks are never shown, so the cheapest
        *extra,
    ]


def _take(extra: list[str], name: str) -> str | None:
    """Remove `--name=value` from `extra` and return the value."""
    for i, arg in enumerate(extra):
        if arg.startswith(f"--{name}="):
            del extra[i]
            return arg.split("=", 1)[1]
    return None


def _end_with_parent(fd: int) -> None:
    """End this process's group (the student's process with it) when the parent's end of the pipe `fd`
    closes: when `kata` ends, killed or not."""

    def watch() -> None:
        try:
            while os.read(fd, 1):
                pass
        except OSError:
            return
        os.killpg(os.getpgid(0), signal.SIGKILL)

    threading.Thread(target=watch, name="kata-lifeline", daemon=True).start()


def register_hypothesis_randoms() -> None:
    """Have hypothesis register the random generators it manages (its own, numpy's), as it does on first
    use, with a full garbage collection that costs a tenth of a second among torch's objects. A zygote does
    it once, before it forks (`kata.grading.zygote`); a cold judge at its start: each reaches the checks in
    the same state (every check seeds those generators afresh)."""
    from hypothesis.internal.entropy import deterministic_PRNG

    with deterministic_PRNG():
        pass


def main(argv: list[str]) -> int:
    kata_id, student, results, *extra = argv
    graders = extra.pop(0).removeprefix(GRADERS_OPTION) if extra and extra[0].startswith(GRADERS_OPTION) else None
    memory = _take(extra, "kata-memory-mb")
    fd = int(results[3:]) if results.startswith("fd:") else os.open(
        results, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    from kata.course import load_course
    from kata.earlier import CURRENT_VARIABLE, MODE_VARIABLE, REFERENCE

    course = load_course()
    kata = course.find(kata_id)
    zygote.import_warm(kata.warm_imports)  # in a unit forked from a zygote: imported there already
    # The student's process: forked now, while nothing of the graders or the reference is here. (It never
    # holds the lifeline: the watcher thread starts after the fork.)
    session = spawn.start(course, kata, student, graders=graders, memory_mb=int(memory) if memory else None,
                          output_limit=DEFAULT_OUTPUT_LIMIT)
    lifeline = _take(extra, "kata-lifeline-fd")
    if lifeline is not None:
        _end_with_parent(int(lifeline))
    os.environ[MODE_VARIABLE] = REFERENCE
    os.environ[CURRENT_VARIABLE] = kata.id
    import pytest

    from kata.grading import plugin
    from kata.student.walls import limit_threads

    plugin.prepare(session=session, writer=plugin.Writer(fd), memory_mb=int(memory) if memory else None)
    register_hypothesis_randoms()
    limit_threads()
    # The graders and the reference are never cached as bytecode: no __pycache__ in the course's folders, and
    # no stale bytecode for a file saved twice within a second at the same size.
    sys.dont_write_bytecode = True
    return int(pytest.main(pytest_args(kata, graders or str(kata.graders), extra), plugins=[plugin]))


if __name__ == "__main__":
    status = main(sys.argv[1:])
    # Everything the parent needs is written (each result as it came). Skip the interpreter's teardown
    # of torch and its million objects: it costs as much as the checks of a small kata.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
