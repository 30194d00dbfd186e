"""The records the grading child writes and the parent reads: one JSON object per line.

Kept free of torch and pytest so the parent (the `kata` command) can read results without importing
either. Events, in order:

- `session`: the child started: kata id, python, torch, cuda availability, devices graded, seed,
             torch's thread count, the memory limit;
- `import`:  the student's module was imported (`status` "ok") or not (a kata-level outcome), and how
             many checks will run;
- `begin`:   a check started: its id and title (so a timeout or crash can name the check it happened in,
             and `kata check` can show it live);
- `check`:   a check finished: id, title, status, message, device, dtype, weight, diagnoses, frames,
             captured output, seconds;
- `tamper`:  the sandbox caught the student's code tampering with the grading (`message`, maybe
             `file` and `line`); any such record makes the kata's outcome "tampered";
- `stack`:   the parent asked (a signal, when the time budget ran out) where the student's code was: its
             frames in the student's file, outermost first (`file`, `line`, `function`), never a grader's;
- `end`:     pytest finished normally. Without it the child was killed or ended itself.

Every record has `seq`, its position in the stream (0, 1, 2, ...). When `kata check` runs the child,
each line is `<json>\t<hex HMAC-SHA256 of the json>` under a key only the parent and the child's
sandbox hold (`kata.grading.sandbox`); `verify_lines` rejects a stream with a line that is not signed,
signed wrongly, or out of sequence, so nothing the student's code writes can pass for a result.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field

from kata.outcomes import FAILED, NOT_IMPLEMENTED, PASSED

# Check statuses (PASSED, FAILED and NOT_IMPLEMENTED are kata outcomes too: kata.outcomes defines them).
ERROR = "error"  # the student's code raised an exception
FORBIDDEN = "forbidden"  # the student's code called a built-in this kata forbids
SKIPPED = "skipped"
TAMPERED = "tampered"  # the student's code tried something the sandbox forbids (reading graders, ...)
MEMORY = "memory-limit"  # the student's code needed more memory than the kata allows
CHECK_STATUSES = (PASSED, FAILED, ERROR, NOT_IMPLEMENTED, FORBIDDEN, SKIPPED, TAMPERED, MEMORY)

# The signal by which the parent asks the child for a `stack` record (POSIX only).
STACK_SIGNAL = "SIGUSR1"

# Import statuses (the `import` event), beside "ok".
IMPORT_OK = "ok"
SYNTAX_ERROR = "syntax-error"
IMPORT_ERROR = "import-error"
EXCEPTION = "exception"


@dataclass
class Stream:
    """What a results stream holds once checked: the events, and why it cannot be trusted (if so)."""

    events: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def sign(key: bytes, payload: bytes) -> str:
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


class Verifier:
    """Checks a results stream one complete line at a time (as the child writes it, so the parent can
    show progress live); with a key, every line must carry a valid signature, in sequence."""

    def __init__(self, key: bytes | None):
        self.key = key
        self.stream = Stream()

    def feed(self, raw: bytes) -> dict | None:
        """One line (without its newline): the record it holds, or None (a problem is noted)."""
        if not raw:
            return None
        stream, key = self.stream, self.key
        payload, tab, mac = raw.rpartition(b"\t")
        if not tab:
            payload, mac = raw, b""
        if key is not None and (not mac or not hmac.compare_digest(sign(key, payload), mac.decode("ascii", "replace"))):
            stream.problems.append("a line of the results was not written by the graders")
            return None
        try:
            record = json.loads(payload.decode("utf-8", "replace"))
        except json.JSONDecodeError:
            stream.problems.append("a line of the results is not valid JSON")
            return None
        if not isinstance(record, dict) or "event" not in record:
            stream.problems.append("a line of the results is not a record")
            return None
        if key is not None and record.get("seq") != len(stream.events):
            stream.problems.append(f"the results are out of sequence (record {record.get('seq')!r} where "
                                   f"{len(stream.events)} was due)")
            return None
        stream.events.append(record)
        return record


def verify_lines(data: bytes, key: bytes | None) -> Stream:
    """Parse a whole results stream (see `Verifier`).

    A last line without its newline is what a killed child leaves: it is dropped, not a problem."""
    verifier = Verifier(key)
    lines = data.split(b"\n")
    if lines and lines[-1] != b"":
        lines = lines[:-1]  # cut short
    for raw in lines:
        verifier.feed(raw)
    return verifier.stream
