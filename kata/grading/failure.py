"""What a check's failure is, as the grading engine reads it: `CheckFailed`, with the classic mistakes
(`Mistake`) it looks like. Graders raise it through the toolkit (`kata.toolkit`: `fail`, `assert_close`);
the plugin turns it into a structured result, and reads the `Mistake`s and `ErrorPattern`s a grader
module defines to know every diagnosis it can give.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Mistake:
    """A classic mistake a grader can recognise, named in the student's feedback."""

    id: str  # stable, kebab-case: planted mistakes declare which one they expect
    explanation: str  # what the student probably did, and the fix


@dataclass(frozen=True)
class ErrorPattern:
    """Recognises a classic mistake from an exception the student's code raised.

    A grader module lists these in `ERROR_PATTERNS`; the plugin matches them against the exception
    ("Type: message") and the student's source line where it was raised.
    """

    mistake: Mistake
    message: str  # regular expression searched in the exception text
    code: str = ""  # regular expression searched in the student's line that raised, if given

    def matches(self, exception_text: str, code_line: str) -> bool:
        return bool(re.search(self.message, exception_text)) and (
            not self.code or bool(re.search(self.code, code_line)))


class CheckFailed(AssertionError):
    """A check's verdict: a message for the student and the mistakes it looks like."""

    def __init__(self, message: str, mistakes: tuple[Mistake, ...] = ()):
        super().__init__(message)
        self.mistakes = mistakes


def fail(message: str, *mistakes: Mistake) -> None:
    raise CheckFailed(message, mistakes)
