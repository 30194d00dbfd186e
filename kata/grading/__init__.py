"""What runs inside the grading child process, and the toolkit grader authors use.

Graders are ordinary pytest files in `graders/<id>-<slug>/`. They receive the student's module as the
`student` fixture and the reference solution as `reference`, compare with `assert_close` (which
writes tensor-aware failure messages and recognises planted classic mistakes), and name checks with
their docstring's first line. `kata.grading.plugin` turns each check into a structured result.

The toolkit's names are loaded on first use: the `kata` command imports `kata.grading.protocol` and
`kata.grading.scan` without paying for `import torch`.
"""

_TOOLKIT = ("CheckFailed", "ErrorPattern", "Mistake", "assert_close", "fail", "tolerance")
__all__ = list(_TOOLKIT)


def __getattr__(name: str):
    if name in _TOOLKIT:
        from kata.grading import compare

        return getattr(compare, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
