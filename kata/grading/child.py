"""The grading child process: `python -m kata.grading.child KATA_ID STUDENT_FILE RESULTS [options] [pytest args]`.

Started by `kata.runner`, never by hand. It runs the kata's graders under pytest with the kata plugin;
everything the parent learns comes through the results (`kata.grading.protocol`): `RESULTS` is a file
path, or `fd:N`, a pipe the parent reads.
`--kata-graders=DIR` (first of the extra arguments) runs the graders in DIR instead of the kata's own
`graders/<id>-<slug>/`: an nbgrader notebook carries its graders in its hidden tests.

Before anything else (torch, pytest, the course), it starts watching `--kata-lifeline-fd=N`, a pipe the
parent holds open (the child ends with its process group when the parent is gone), reads the run's key
from `--kata-key-fd=N` and closes that pipe, and applies the memory limit (`--kata-memory-mb=N`); the
plugin then installs the sandbox (`kata.grading.sandbox`), which from then on holds the key and writes
every result, signed.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

from kata.grading import limits, sandbox

GRADERS_OPTION = "--kata-graders="
# Plugins the graders do not need: fewer to import, and less for the student's code to reach.
# (assertion: plain asserts, since a rewritten assert would print grader source.)
UNUSED_PLUGINS = ("assertion", "cacheprovider", "faulthandler", "warnings", "logging", "junitxml", "doctest",
                  "pastebin", "stepwise", "setuponly", "setupplan", "unittest", "debugging", "legacypath",
                  "unraisableexception", "threadexception", "subtests")


def pytest_args(kata, student: str, results: str, extra: list[str], graders: str | None = None) -> list[str]:
    graders = graders or str(kata.graders)
    disabled = [arg for name in UNUSED_PLUGINS for arg in ("-p", f"no:{name}")]
    return [
        graders,
        f"--kata-id={kata.id}", f"--kata-student={student}", f"--kata-results={results}",
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


def _read_key(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _end_with_parent(fd: int) -> None:
    """End this process's group (the student's processes with it) when the parent's end of the pipe `fd`
    closes: when `kata` ends, killed or not, since only it enforces the time budget (an infinite loop
    would otherwise spin on alone)."""

    def watch() -> None:
        try:
            while os.read(fd, 1):
                pass
        except OSError:  # the descriptor closed under us (by the student's code): the parent still ends the run
            return
        os.killpg(os.getpgid(0), signal.SIGKILL)

    threading.Thread(target=watch, name="kata-lifeline", daemon=True).start()


def register_hypothesis_randoms() -> None:
    """Have hypothesis register the random generators it manages (its own, numpy's), as it does on first
    use, with a full garbage collection that costs a tenth of a second among torch's objects. A zygote does
    it once, before it forks (`kata.grading.zygote`); a cold child at its start: each reaches the checks in
    the same state (every check seeds those generators afresh)."""
    from hypothesis.internal.entropy import deterministic_PRNG

    with deterministic_PRNG():
        pass


def main(argv: list[str]) -> int:
    kata_id, student, results, *extra = argv
    lifeline = _take(extra, "kata-lifeline-fd")
    if lifeline is not None:
        _end_with_parent(int(lifeline))
    graders = extra.pop(0).removeprefix(GRADERS_OPTION) if extra and extra[0].startswith(GRADERS_OPTION) else None
    key_fd = _take(extra, "kata-key-fd")
    key = _read_key(int(key_fd)) if key_fd is not None else None
    memory = _take(extra, "kata-memory-mb")
    if memory is not None:
        limits.limit_memory(int(memory))
        extra.append(f"--kata-memory-mb={memory}")
    go = _take(extra, "kata-go-fd")
    if go is not None:
        extra.append(f"--kata-go-fd={go}")
    fd = int(results[3:]) if results.startswith("fd:") else os.open(
        results, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    sandbox.prepare(key=key or None, fd=fd)  # installed by the plugin, before any grader or student code
    del key

    from kata.course import load_course
    from kata.earlier import CURRENT_VARIABLE, MODE_VARIABLE, REFERENCE

    kata = load_course().find(kata_id)
    os.environ[MODE_VARIABLE] = REFERENCE
    os.environ[CURRENT_VARIABLE] = kata.id
    import pytest

    from kata.grading import plugin

    register_hypothesis_randoms()
    limits.limit_threads()
    # What was imported so far (the kata package, pytest) is cached as bytecode like any module; the graders,
    # the reference solutions and the student's file never are: no __pycache__ in the student's folders, and
    # no stale bytecode for a file saved twice within a second at the same size.
    sys.dont_write_bytecode = True
    return int(pytest.main(pytest_args(kata, student, results, extra, graders), plugins=[plugin]))


if __name__ == "__main__":
    status = main(sys.argv[1:])
    # Everything the parent needs is written (each result as it came). Skip the interpreter's teardown
    # of torch and its million objects: it costs as much as the checks of a small kata.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
