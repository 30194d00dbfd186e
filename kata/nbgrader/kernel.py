"""An IPython extension for nbgrader's autograde: in the grading kernel, only grade cells run.

The exported `nbgrader_config.py` loads it into every kernel nbgrader starts
(`--IPKernelApp.extensions=kata.nbgrader.kernel`). During `nbgrader autograde` (nbgrader sets
`NBGRADER_EXECUTION=autograde`) every cell that is not a kata grade cell is recorded in the input
history but not run: the grade cell grades the student's cells in a separate process, exactly as
`kata check` does. So no student code runs in the kernel, and none can hang it, kill it or tamper
with the grading there. Under `nbgrader validate`, and anywhere else, it does nothing.
"""

from __future__ import annotations

import os

from kata.nbgrader.runtime import GRADE_IMPORT


def only_grade_cells(lines: list[str]) -> list[str]:
    """An input transformer: a grade cell's lines as they are, any other cell's replaced by nothing."""
    return lines if GRADE_IMPORT in "".join(lines) else []


def load_ipython_extension(shell) -> None:
    if os.environ.get("NBGRADER_EXECUTION") == "autograde" and only_grade_cells not in (
            shell.input_transformers_cleanup):
        shell.input_transformers_cleanup.insert(0, only_grade_cells)


def unload_ipython_extension(shell) -> None:
    if only_grade_cells in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.remove(only_grade_cells)
