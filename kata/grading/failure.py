"""What a check's failure is, as the grading engine reads it: `CheckFailed`, with the classic mistakes
(`Mistake`) it looks like. Graders raise it through the toolkit (`kata.toolkit`: `fail`, `assert_close`);
the plugin turns it into a structured result, and reads the `Mistake`s and `ErrorPattern`s a grader
module defines to know every diagnosis it can give.
"""

from __future__ import annotations

import re
from collections.abc import Callable
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
    ("Type: message") and the student's source line where it was raised. A `fallback` pattern reads an
    error in general terms (a Python operator torch refuses, say) and names it only when no pattern of the
    kata's own, which knows why that kata's code fails so, matched the same error.
    """

    mistake: Mistake
    message: str  # regular expression searched in the exception text
    code: str = ""  # regular expression searched in the student's line that raised, if given
    fallback: bool = False
    # A test of the message's match, for what a regular expression cannot say (the sizes torch printed add up?)
    when: Callable[[re.Match], bool] | None = None

    def matches(self, exception_text: str, code_line: str) -> bool:
        found = re.search(self.message, exception_text)
        return bool(found) and (not self.code or bool(re.search(self.code, code_line))) and (
            self.when is None or self.when(found))


def diagnose_error(patterns, exception_text: str, code_line: str) -> tuple[Mistake, ...]:
    """The mistakes an exception of the student's code shows: every matching pattern of the kata's own, or, when
    none matched, every matching fallback."""
    matched = [p for p in patterns if p.matches(exception_text, code_line)]
    own = [p for p in matched if not p.fallback]
    return tuple(p.mistake for p in own or matched)


class CheckFailed(AssertionError):
    """A check's verdict: a message for the student and the mistakes it looks like."""

    def __init__(self, message: str, mistakes: tuple[Mistake, ...] = ()):
        super().__init__(message)
        self.mistakes = mistakes


def fail(message: str, *mistakes: Mistake) -> None:
    raise CheckFailed(message, mistakes)
