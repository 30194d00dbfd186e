"""A student's progress: one JSON file in the course root (or at `$KATA_PROGRESS`).

Schema (version 1)::

    {"schema": 1,
     "current": "9.2",
     "katas": {"9.1": {"status": "passed", "attempts": 3, "first_passed": "2026-11-22T10:15:00+00:00",
                       "last_checked": "...", "hints_used": 1, "solution_revealed": false,
                       "passed_hash": "sha256 of the exercise file that passed", "skipped": false}}}

`status` is one of "not-started", "failing", "passed", "skipped". `current` (optional) is the kata
`kata goto` chose: `kata watch` starts there. A pass carries its proof, `passed_hash`, the SHA-256 of
the exercise file that passed: `kata verify --progress` re-hashes (and can re-grade) each passed kata
and reports passes without proof or whose file no longer matches (`verify_passes`). Every change is a read-modify-write
under a file lock, written to a temporary file and renamed over the old one, so two checks at once
lose nothing and a crash mid-write leaves the previous file. A file that cannot be read or parsed is
moved aside (`.corrupt-<time>`) with a warning and a fresh one is started: never a crash, never a
silent loss. In a file that parses, an invalid value (`"status": "awesome"`, an entry that is not an
object) costs only itself: it goes to `.invalid-<time>` (the values as found, and why each was set
aside), with a warning naming each; every valid entry and field stays.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock

from kata.outcomes import PASSED

SCHEMA_VERSION = 1
FILE_NAME = ".kata-progress.json"
ENV_VARIABLE = "KATA_PROGRESS"

NOT_STARTED = "not-started"
FAILING = "failing"
SKIPPED = "skipped"
STATUSES = (NOT_STARTED, FAILING, PASSED, SKIPPED)


class ProgressWarning(UserWarning):
    """The progress file, or some values in it, were invalid and have been set aside."""


@dataclass
class KataProgress:
    status: str = NOT_STARTED
    attempts: int = 0
    first_passed: str | None = None
    last_checked: str | None = None
    hints_used: int = 0
    solution_revealed: bool = False
    passed_hash: str | None = None

    @classmethod
    def from_dict(cls, data: dict) -> tuple[KataProgress, dict[str, str]]:
        """The entry's valid fields (the defaults for the rest), and why each invalid field is invalid."""
        valid, invalid = {}, {}
        for name, value in data.items():
            check = _FIELD_CHECKS.get(name)
            if check is None:
                continue  # a field of a newer version of the schema: not ours to judge
            why = check(value)
            if why:
                invalid[name] = why
            else:
                valid[name] = value
        return cls(**valid), invalid


def _count(value) -> str | None:
    return None if type(value) is int and value >= 0 else "not a count (a whole number, 0 or more)"


def _text(value) -> str | None:
    return None if value is None or isinstance(value, str) else "not a string or null"


_FIELD_CHECKS = {
    "status": lambda v: None if v in STATUSES else f"not a status (one of {', '.join(STATUSES)})",
    "attempts": _count,
    "hints_used": _count,
    "first_passed": _text,
    "last_checked": _text,
    "passed_hash": _text,
    "solution_revealed": lambda v: None if isinstance(v, bool) else "not true or false",
}


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def file_hash(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def progress_path(course_root: Path) -> Path:
    env = os.environ.get(ENV_VARIABLE)
    return Path(env).expanduser().resolve() if env else course_root / FILE_NAME


class Progress:
    """The progress file of one course. Read with `load()`; change with `with progress.edit() as katas:`."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = FileLock(str(path) + ".lock", timeout=30)
        self._current: str | None = None  # the top-level "current", as last read

    def load(self) -> dict[str, KataProgress]:
        with self._lock:
            return self._read()

    def get(self, kata_id: str) -> KataProgress:
        return self.load().get(kata_id, KataProgress())

    @contextlib.contextmanager
    def edit(self) -> Iterator[dict[str, KataProgress]]:
        """Yield every kata's progress under the lock; written back atomically when the block ends."""
        with self._lock:
            katas = self._read()
            yield katas
            self._write(katas)

    def _read(self) -> dict[str, KataProgress]:
        self._current = None
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            self._move_aside(f"unreadable: {exc}")
            return {}
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or data.get("schema") != SCHEMA_VERSION:
                raise ValueError(f"schema {data.get('schema') if isinstance(data, dict) else None!r}, "
                                 f"expected {SCHEMA_VERSION}")
            entries = data.get("katas", {})
            if not isinstance(entries, dict):
                raise ValueError("its katas are not an object")
        except (ValueError, TypeError, AttributeError) as exc:
            self._move_aside(f"not a valid progress file ({exc})")
            return {}
        katas: dict[str, KataProgress] = {}
        aside: dict = {}  # what is set aside: per kata, the invalid entry or its invalid fields, with why
        reasons: list[str] = []
        for kid, entry in entries.items():
            if not isinstance(entry, dict):
                aside[kid] = {"value": entry, "why": "not an object"}
                reasons.append(f"{kid}: not an object")
                continue
            katas[kid], invalid = KataProgress.from_dict(entry)
            if invalid:
                aside[kid] = {"fields": {name: {"value": entry[name], "why": why} for name, why in invalid.items()}}
                reasons += [f"{kid} {name} {json.dumps(entry[name])}: {why}" for name, why in invalid.items()]
        current = data.get("current")
        self._current = current if isinstance(current, str) else None
        if current is not None and self._current is None:
            aside["current"] = {"value": current, "why": "not a kata id"}
            reasons.append(f"current {json.dumps(current)}: not a kata id")
        if aside:
            self._set_aside(aside, reasons)
            self._write(katas)
        return katas

    def _set_aside(self, aside: dict, reasons: list[str]) -> None:
        """Keep the invalid values next to the progress file, and say which they were."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        target = self.path.with_name(f"{self.path.name}.invalid-{stamp}")
        target.write_text(json.dumps({"schema": SCHEMA_VERSION, "invalid": aside}, indent=2) + "\n", encoding="utf-8")
        warnings.warn(f"{self.path}: invalid values set aside in {target.name} ({'; '.join(reasons)}); everything "
                      "else is kept", ProgressWarning, stacklevel=4)

    def _move_aside(self, why: str) -> None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        os.replace(self.path, aside)
        warnings.warn(f"{self.path} was {why}; moved it to {aside.name} and started a new one",
                      ProgressWarning, stacklevel=4)

    def _write(self, katas: dict[str, KataProgress]) -> None:
        data: dict = {"schema": SCHEMA_VERSION}
        if self._current:
            data["current"] = self._current
        data["katas"] = {kid: asdict(p) for kid, p in sorted(katas.items())}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    # The events the commands record.

    def record_check(self, kata_id: str, passed: bool, exercise: Path) -> KataProgress:
        with self.edit() as katas:
            entry = katas.setdefault(kata_id, KataProgress())
            entry.attempts += 1
            entry.last_checked = now()
            # The status is the latest check's; first_passed and passed_hash keep the proof of a pass.
            entry.status = PASSED if passed else FAILING
            if passed:
                entry.first_passed = entry.first_passed or entry.last_checked
                entry.passed_hash = file_hash(exercise)
            return entry

    def record_hint(self, kata_id: str, tier: int) -> KataProgress:
        with self.edit() as katas:
            entry = katas.setdefault(kata_id, KataProgress())
            entry.hints_used = max(entry.hints_used, tier)
            return entry

    def record_solution_revealed(self, kata_id: str) -> KataProgress:
        with self.edit() as katas:
            entry = katas.setdefault(kata_id, KataProgress())
            entry.solution_revealed = True
            return entry

    def record_skip(self, kata_id: str) -> KataProgress:
        with self.edit() as katas:
            entry = katas.setdefault(kata_id, KataProgress())
            if entry.status != PASSED:
                entry.status = SKIPPED
            return entry

    def current(self) -> str | None:
        """The kata `kata goto` chose (None if it never ran, or after the course's end)."""
        with self._lock:
            self._read()
            return self._current

    def set_current(self, kata_id: str | None) -> None:
        with self.edit():
            self._current = kata_id


@dataclass
class PassCheck:
    """What `kata verify --progress` found for one kata recorded as passed."""

    kata: str
    verdict: str  # "ok", "no-proof", "changed", "missing", "regraded-failing"
    detail: str = ""
    recorded_hash: str | None = None
    file_hash: str | None = None

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"


def verify_passes(katas, states: dict[str, KataProgress], regrade=None) -> list[PassCheck]:
    """Each pass must carry the hash of the file that passed, and that file must still be it.

    `katas`: the course's katas (with `.id` and `.exercise`); `regrade(kata) -> bool`, if given, grades
    the exercise of each pass whose hash matches, to prove it passes now too."""
    found = []
    for kata in katas:
        state = states.get(kata.id)
        if state is None or state.status != PASSED:
            continue
        current = file_hash(kata.exercise)
        check = PassCheck(kata.id, "ok", recorded_hash=state.passed_hash, file_hash=current)
        if not state.passed_hash:
            check.verdict, check.detail = "no-proof", "recorded as passed without the hash of the file that passed"
        elif current is None:
            check.verdict, check.detail = "missing", f"{kata.exercise} is gone"
        elif current != state.passed_hash:
            check.verdict = "changed"
            check.detail = (f"{kata.exercise} is not the file that passed (edited since, or the pass was not "
                            "recorded by kata check): `kata check " + kata.id + "` records it again")
        elif regrade is not None and not regrade(kata):
            check.verdict, check.detail = "regraded-failing", "the file that passed does not pass when graded again"
        found.append(check)
    return found


def changed_since_pass(katas, states: dict[str, KataProgress]) -> set[str]:
    """The ids of the katas recorded as passed whose exercise file is no longer the file that passed (reset
    to its stub, edited, or gone): the pass stands in the progress file, but not for the file there now."""
    return {check.kata for check in verify_passes(katas, states) if check.verdict in ("changed", "missing")}


def next_kata(katas, states: dict[str, KataProgress]):
    """The first kata in course order that is neither passed nor skipped (None when all are done)."""
    return next((k for k in katas if states.get(k.id, KataProgress()).status not in (PASSED, SKIPPED)), None)


def current_kata(katas, states: dict[str, KataProgress], chosen: str | None):
    """The kata `kata goto` chose (`chosen`, its id) while it is neither passed nor skipped; else the next
    one in course order (None when all are done). Where `kata watch` and commands without an ID start."""
    kata = next((k for k in katas if k.id == chosen), None)
    if kata is not None and states.get(kata.id, KataProgress()).status not in (PASSED, SKIPPED):
        return kata
    return next_kata(katas, states)


def unmet(kata_list, states: dict[str, KataProgress]) -> list:
    """The katas in `kata_list` not passed yet."""
    return [k for k in kata_list if states.get(k.id, KataProgress()).status != PASSED]
