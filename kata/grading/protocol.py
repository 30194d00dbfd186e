"""The records the grading child writes and the parent reads: one JSON object per line.

Kept free of torch and pytest so the parent (the `kata` command) can read results without importing
either. Events, in order:

- `session`: the child started: kata id, python, torch, cuda availability, devices graded, seed;
- `import`:  the student's module was imported (`status` "ok") or not (a kata-level outcome);
- `begin`:   a check started (so a timeout or crash can name the check it happened in);
- `check`:   a check finished: id, title, status, message, device, dtype, weight, diagnoses, frames,
             captured output, seconds;
- `end`:     pytest finished normally. Without it the child was killed or ended itself.
"""

from __future__ import annotations

import json
from pathlib import Path

# Check statuses.
PASSED = "passed"
FAILED = "failed"  # a grader's assertion about the student's results failed
ERROR = "error"  # the student's code raised an exception
NOT_IMPLEMENTED = "not-implemented"  # the student's code raised NotImplementedError (the stub)
FORBIDDEN = "forbidden"  # the student's code called a built-in this kata forbids
SKIPPED = "skipped"
CHECK_STATUSES = (PASSED, FAILED, ERROR, NOT_IMPLEMENTED, FORBIDDEN, SKIPPED)

# Import statuses (the `import` event), beside "ok".
IMPORT_OK = "ok"
SYNTAX_ERROR = "syntax-error"
IMPORT_ERROR = "import-error"
EXCEPTION = "exception"


class ResultWriter:
    """Appends events to the results file, flushed one by one so that a killed child loses none."""

    def __init__(self, path: Path):
        self._file = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 (lives as long as the child)

    def write(self, event: str, **fields) -> None:
        self._file.write(json.dumps({"event": event, **fields}) + "\n")
        self._file.flush()


def read_events(path: Path) -> list[dict]:
    """Every complete record in the file; a line cut short by a killed child is ignored."""
    events = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return events
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and "event" in record:
            events.append(record)
    return events
