"""Stubs are derived from solutions exactly as nbgrader derives a student's version."""

from __future__ import annotations

import nbformat
import pytest
from nbgrader.preprocessors import ClearSolutions

from kata.course import load_course
from kata.stubs import StubError, count_regions, derive_stub, strip_markers

SOLUTION = '''"""Doc."""
import torch


def f(x):
    """Docstring kept."""
    ### BEGIN SOLUTION
    y = x + 1
    return y
    ### END SOLUTION


class M:
    def forward(self, x):
        if x:
            ### BEGIN SOLUTION
            return 1
            ### END SOLUTION
        return 0
'''


def nbgrader_release(source: str) -> str:
    """What nbgrader's own ClearSolutions makes of `source` in a solution cell."""
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python",
                                                           "display_name": "Python 3"}})
    nb.cells.append(nbformat.v4.new_code_cell(source, metadata={"nbgrader": {
        "schema_version": 3, "grade": False, "solution": True, "locked": False, "task": False, "grade_id": "x"}}))
    released, _ = ClearSolutions().preprocess(nb, {})
    return released.cells[0].source


def test_regions_become_the_stub_at_their_indentation():
    stub = derive_stub(SOLUTION)
    assert "    # YOUR CODE HERE\n    raise NotImplementedError()\n" in stub
    assert "            # YOUR CODE HERE\n            raise NotImplementedError()\n        return 0" in stub
    assert "y = x + 1" not in stub and "return 1" not in stub
    assert '"""Docstring kept."""' in stub
    assert count_regions(SOLUTION) == 2


def test_same_text_as_nbgrader_generates():
    assert derive_stub(SOLUTION) == nbgrader_release(SOLUTION)


def test_every_committed_exercise_is_its_derived_stub():
    course = load_course()
    for kata in course.katas:
        solution = kata.solution.read_text(encoding="utf-8")
        assert kata.exercise.read_text(encoding="utf-8") == derive_stub(solution), (
            f"{kata.exercise} is not derived from {kata.solution} (run `kata stubs --write`)")
        assert derive_stub(solution) == nbgrader_release(solution)


@pytest.mark.parametrize(("source", "message"), [
    ("### BEGIN SOLUTION\nx\n", r"solution.py:1: ### BEGIN SOLUTION is never closed"),
    ("x\n### END SOLUTION\n", r"solution.py:2: ### END SOLUTION without ### BEGIN SOLUTION"),
    ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION\n",
     r"solution.py:2: ### BEGIN SOLUTION inside the region opened at line 1"),
])
def test_unbalanced_markers_are_errors_with_the_line(source, message):
    with pytest.raises(StubError, match=message):
        derive_stub(source)


def test_strip_markers_leaves_the_reading_version():
    text = strip_markers(SOLUTION)
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    assert "y = x + 1" in text
