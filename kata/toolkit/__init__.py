"""The toolkit of grader authors: what a kata's graders (`graders/<id>-<slug>/test_*.py`) are written with.

Graders are ordinary pytest files. They receive the student's module as the `student` fixture and the
reference solution as `reference`, compare with `assert_close` (which writes tensor-aware failure
messages and recognises planted classic mistakes), and name checks with their docstring's first line.

- `compare`: `assert_close`, `is_close`, `assert_finite`, `describe`, tolerances;
- `common`: the checks and the `Mistake`s every kata shares (inputs left unchanged, the output's shape,
  dtype and device, batch independence, gradients equal to a reference, copies of a module's inputs);
- `gradients`: `gradcheck` with a readable report; `properties`: hypothesis, derandomised;
- `torch_layers`: PyTorch's own layers holding a student's weights, to compare on equal terms.

Only the grading child imports it (it imports torch).
"""

from kata.grading.failure import CheckFailed, ErrorPattern, Mistake, fail
from kata.toolkit.compare import assert_close, tolerance

__all__ = ["CheckFailed", "ErrorPattern", "Mistake", "assert_close", "fail", "tolerance"]
