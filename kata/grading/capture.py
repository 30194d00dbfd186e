"""What the student's code prints, captured and cut to a sane size.

`sys.stdout` and `sys.stderr` are swapped for a stream that keeps the first `limit` characters and
counts the rest, so a loop printing megabytes costs the student time, not the grader's memory.
"""

from __future__ import annotations

import contextlib
import io
import sys

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


@contextlib.contextmanager
def captured(limit: int = DEFAULT_LIMIT):
    """Route `print` and writes to stdout/stderr into one capped stream for the block's duration."""
    stream = CappedStream(limit)
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = stream
    try:
        yield stream
    finally:
        sys.stdout, sys.stderr = saved
