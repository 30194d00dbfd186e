"""An IPython extension for nbgrader's autograde: in the grading kernel, only grade cells run.

The exported `nbgrader_config.py` loads it into every kernel nbgrader starts
(`--IPKernelApp.extensions=kata.nbgrader.kernel`), and lists the grade cells the export wrote (their
nbgrader grade ids and the SHA-256 of each one's exact source, in `$KATA_GRADE_CELLS`). During
`nbgrader autograde` (nbgrader sets `NBGRADER_EXECUTION=autograde`, and puts the grade cells back as
they were released) a cell runs only when its source is exactly one of those; every other cell is
recorded in the input history but not run: the grade cell grades the student's cells in a separate,
sandboxed process, as `kata check` does. So no student code runs in the kernel, and none can hang it,
kill it or change the grading there (a student's cell that merely mentions the grade cell's import,
or copies all of it but one character, is not a grade cell). Under `nbgrader validate`, and anywhere
else, it does nothing.
"""

from __future__ import annotations

import hashlib
import json
import os

GRADE_CELLS_VARIABLE = "KATA_GRADE_CELLS"


def checksum(source: str) -> str:
    """The checksum a grade cell is known by: of its exact source (trailing newlines aside: IPython adds one)."""
    return hashlib.sha256(source.rstrip("\n").encode("utf-8")).hexdigest()


def grade_cells() -> frozenset[str]:
    """The checksums of the grade cells the export wrote, from the environment (empty: none run)."""
    try:
        listed = json.loads(os.environ.get(GRADE_CELLS_VARIABLE, "{}"))
    except ValueError:
        return frozenset()
    return frozenset(v for v in listed.values() if isinstance(v, str)) if isinstance(listed, dict) else frozenset()


class OnlyGradeCells:
    """An input transformer: an exported grade cell's lines as they are, any other cell's replaced by nothing."""

    def __init__(self, checksums: frozenset[str]):
        self.checksums = checksums

    def __call__(self, lines: list[str]) -> list[str]:
        return lines if checksum("".join(lines)) in self.checksums else []


def load_ipython_extension(shell) -> None:
    if os.environ.get("NBGRADER_EXECUTION") == "autograde" and not any(
            isinstance(t, OnlyGradeCells) for t in shell.input_transformers_cleanup):
        shell.input_transformers_cleanup.insert(0, OnlyGradeCells(grade_cells()))


def unload_ipython_extension(shell) -> None:
    shell.input_transformers_cleanup[:] = [t for t in shell.input_transformers_cleanup
                                           if not isinstance(t, OnlyGradeCells)]
