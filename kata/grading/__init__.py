"""What runs inside the grading child process, and the toolkit grader authors use.

Graders are ordinary pytest files in `graders/<id>-<slug>/`. They receive the student's module as the
`student` fixture and the reference solution as `reference`, compare with `assert_close` (which
writes tensor-aware failure messages and recognises planted classic mistakes), and name checks with
their docstring's first line. `kata.grading.plugin` turns each check into a structured result.
"""

from kata.grading.compare import CheckFailed, ErrorPattern, Mistake, assert_close, fail, tolerance

__all__ = ["CheckFailed", "ErrorPattern", "Mistake", "assert_close", "fail", "tolerance"]
