"""The records the judge writes and the parent reads: one JSON object per line.

Kept free of torch and pytest so the parent (the `kata` command) can read results without importing
either. Only the judge writes them (the student's code runs in a process of its own, which holds no
descriptor of the results), so no line needs a signature. Events, in order:

- `session`: the judge started: kata id, python, torch, cuda availability, devices graded, seed,
             torch's thread count, the memory limit;
- `import`:  the student's module was run (`status` "ok") or not (a kata-level outcome), how many checks
             will run, their weights and the ids of the critical ones (`kata.scoring`), and the walls of
             the student's process;
- `begin`:   a check started: its id and title (so a crash can name the check it happened in, and
             `kata check` can show it live);
- `check`:   a check finished: id, title, status, message, device, dtype, weight, diagnoses, frames,
             captured output, seconds;
- `gone`:    the student's process ended, or broke the protocol, or ran out of time, during a check:
             `kind` ("crash", "protocol", "timeout", "memory"), `message`, `check`, `frames` (for a
             timeout, where the student's code was, if its process said: display text only);
- `end`:     pytest finished normally. Without it the judge itself was killed or failed.

Every record has `seq`, its position in the stream (0, 1, 2, ...): a record missing or out of order
means the stream was cut.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from kata.outcomes import FAILED, NOT_IMPLEMENTED, PASSED

# Check statuses (PASSED, FAILED and NOT_IMPLEMENTED are kata outcomes too: kata.outcomes defines them).
ERROR = "error"  # the student's code raised an exception
FORBIDDEN = "forbidden"  # the student's code called a built-in this kata forbids
SKIPPED = "skipped"
MEMORY = "memory-limit"  # the student's code needed more memory than the kata allows
TIMEOUT = "timeout"  # the student's code ran past the kata's time budget during this check
CRASH = "crash"  # the student's process ended (or broke the protocol) during this check
CHECK_STATUSES = (PASSED, FAILED, ERROR, NOT_IMPLEMENTED, FORBIDDEN, SKIPPED, MEMORY, TIMEOUT, CRASH)

# Import statuses (the `import` event), beside "ok".
IMPORT_OK = "ok"
SYNTAX_ERROR = "syntax-error"
IMPORT_ERROR = "import-error"
EXCEPTION = "exception"
INTERNAL = "internal-error"  # the judge could not run the student's file as it must (no walls, for credit)


@dataclass
class Stream:
    """What a results stream holds once read: the events, and why it is broken (if so)."""

    events: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class Reader:
    """Reads a results stream one complete line at a time (as the judge writes it, so the parent can show
    progress live), in sequence."""

    def __init__(self):
        self.stream = Stream()

    def feed(self, raw: bytes) -> dict | None:
        """One line (without its newline): the record it holds, or None (a problem is noted)."""
        if not raw:
            return None
        stream = self.stream
        try:
            record = json.loads(raw.decode("utf-8", "replace"))
        except json.JSONDecodeError:
            stream.problems.append("a line of the results is not valid JSON")
            return None
        if not isinstance(record, dict) or "event" not in record:
            stream.problems.append("a line of the results is not a record")
            return None
        if record.get("seq") != len(stream.events):
            stream.problems.append(f"the results are out of sequence (record {record.get('seq')!r} where "
                                   f"{len(stream.events)} was due)")
            return None
        stream.events.append(record)
        return record


def read_lines(data: bytes) -> Stream:
    """Parse a whole results stream (see `Reader`). A last line without its newline is what a killed judge
    leaves: it is dropped, not a problem."""
    reader = Reader()
    lines = data.split(b"\n")
    if lines and lines[-1] != b"":
        lines = lines[:-1]  # cut short
    for raw in lines:
        reader.feed(raw)
    return reader.stream
