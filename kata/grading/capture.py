"""What the student's code prints, captured and cut to a sane size.

`sys.stdout` and `sys.stderr` are swapped for a stream that keeps the first `limit` characters and
counts the rest, so a loop printing megabytes costs the student time, not the grader's memory.

Warnings are shown as the student's: one that points into the student's file as it is; one that
points elsewhere (torch's code, a grader's line that called the student's function) at the student's
line that caused it; one the student's code did not cause (a grader computing what a classic mistake
would output) not at all. A grader's path, line or source is never shown.
"""

from __future__ import annotations

import contextlib
import io
import sys
import warnings

from kata.grading import guard

DEFAULT_LIMIT = 4000


class CappedStream(io.TextIOBase):
    def __init__(self, limit: int):
        self.limit = limit
        self.kept: list[str] = []
        self.size = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        room = self.limit - self.size
        if room > 0:
            self.kept.append(text[:room])
            self.size += min(len(text), room)
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def text(self) -> str:
        out = "".join(self.kept)
        if self.dropped:
            out += f"\n… {self.dropped:,} more characters not shown"
        return out


def show_warning(message, category, filename, lineno, file=None, line=None):
    """`warnings.showwarning` in the grading process (installed by the plugin before the seal)."""
    if guard.is_student(filename):
        where, out = (filename, lineno), file or sys.stderr
    else:
        where = guard.offender(sys._getframe(1), through_kata=True)  # the student's line that caused it, if any
        line = None  # the student's source line, not the one the warning pointed at
        out = file or sys.stderr
        if where is None:  # the graders' own: for the course author's log, without any source line
            where, line, out = (filename, lineno), "", sys.__stderr__
    if out is not None:
        out.write(warnings.formatwarning(message, category, *where, line))


@contextlib.contextmanager
def captured(limit: int = DEFAULT_LIMIT):
    """Route `print`, writes to stdout/stderr and warnings into one capped stream for the block's duration."""
    stream = CappedStream(limit)
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = stream
    try:
        yield stream
    finally:
        sys.stdout, sys.stderr = saved
