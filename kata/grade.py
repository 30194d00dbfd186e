"""Bulk grading of plain files (`kata grade`), for instructors who collect folders rather than notebooks.

A class is a folder with one entry per student: a folder (a GitHub Classroom clone, an unpacked LMS
download) or a `.zip` of one. In a student's files, the code of kata 9.4 is the shallowest of

    exercises/9.4-multi-head-attention/exercise.py     (a clone of the course)
    9.4-multi-head-attention/exercise.py
    9.4-multi-head-attention.py                         (what a `kata notebook` notebook writes)

at any depth, so a clone inside one more folder (as zips often hold) is found too.

The unit of work is one (student, kata): `grade_kata(course, kata, submission)` is a pure function of
them that grades in its own child process under the kata's time budget and memory limit (`kata.runner`),
so the same unit could run on any machine. `grade_class` runs the units `jobs` at a time and appends
each result, as soon as it is known, to a journal (`results.jsonl` in the output folder, one JSON
object a line, flushed to disk): an interrupted run continues where it stopped. A result is reused only
while the student's file (its SHA-256) and the kata's graders (`graders_fingerprint`) are the ones it
was graded with; results the graders could not produce (internal errors) are graded again. The reports
(`grades.csv`, `katas.csv`, `checks.csv`, `grades.json`, and each student's feedback: `kata.feedback`)
are written from the journal at the end of every run, finished or not.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import hmac
import io
import json
import os
import secrets
import shutil
import signal
import stat
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout

from kata import runner, scoring, wording
from kata.course import Course, Kata
from kata.grading import isolation
from kata.pool import Pool, open_pool
from kata.progress import file_hash

SCHEMA = "kata.grade/1"
JOURNAL = "results.jsonl"
MISSING = "missing"  # no file for the kata in the submission
UNREADABLE = "unreadable"  # the submission itself could not be read (a broken zip)
NOT_REGULAR = "not-a-regular-file"  # the kata's file (or a folder on its way) is a symbolic link: never followed
UNSAFE = "none (--unsafe-no-sandbox)"  # the isolation of units graded without a sandbox
SKIPPED_DIRS = {".git", "__pycache__", ".venv", "venv", "node_modules", ".kata-backups", ".ipynb_checkpoints"}
MAX_DEPTH = 6  # folders below a student's folder searched for the kata files
ZIP_MEMBER_LIMIT = 4 * 1024 * 1024  # bytes: a larger .py in a zip is not unpacked
MESSAGE_LIMIT = 2000  # characters of a message kept in the JSON report (the CSVs keep one line of 300)


class GradeError(Exception):
    """The class cannot be graded as asked (a usage problem, not a student's)."""


@dataclass(frozen=True)
class Shard:
    """Part `index` of `count` (`--shard 3/8`, from 0 as Kubernetes' JOB_COMPLETION_INDEX): the units whose
    (student, kata) hash to it. A stable hash, not list position, so a student added to the class or a
    kata chosen moves no other unit to another shard."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        try:
            index, count = (int(part) for part in text.split("/"))
        except ValueError:
            raise GradeError(f"--shard {text!r}: write it as I/N, e.g. 0/4 (the first of four)") from None
        if not 0 <= index < count:
            raise GradeError(f"--shard {text}: I must be from 0 to N-1")
        return cls(index, count)

    def holds(self, student: str, kata_id: str) -> bool:
        digest = hashlib.sha256(f"{student}\0{kata_id}".encode()).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class Submission:
    """One student's work: the entry in the class folder, and where its files are."""

    student: str
    source: Path  # the folder or zip in the class folder
    folder: Path | None  # where the student's files are (for a zip: where it was unpacked)
    problem: str = ""  # why the submission could not be read, if it could not

    def locate(self, course: Course) -> dict[str, Path]:
        """The file of each kata found in the submission, by kata id."""
        if self.folder is None:
            return {}
        wanted = {}
        for kata in course.katas:
            wanted[(kata.dirname, "exercise.py")] = kata.id
            wanted[(None, f"{kata.dirname}.py")] = kata.id
        found: dict[str, tuple[int, str, Path]] = {}
        top = len(self.folder.parts)
        for here, dirs, files in os.walk(self.folder):  # symbolic links to folders are listed, never entered
            depth = len(Path(here).parts) - top
            linked = [d for d in dirs if os.path.islink(os.path.join(here, d))]
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and depth < MAX_DEPTH and d not in linked)
            # A linked kata folder stands for its exercise.py: graded as a link (0 points, with the reason).
            candidates = [*files, *(os.path.join(d, "exercise.py") for d in linked)]
            for name in candidates:
                if os.sep in name:
                    folder, _, name = name.rpartition(os.sep)
                    kata_id = wanted.get((folder, name))
                    path = Path(here) / folder / name
                else:
                    kata_id = wanted.get((Path(here).name, name)) or wanted.get((None, name))
                    path = Path(here) / name
                if kata_id is None:
                    continue
                rank = (depth, str(path))
                if kata_id not in found or rank < found[kata_id][:2]:
                    found[kata_id] = (*rank, path)
        return {kata_id: path for kata_id, (_, _, path) in found.items()}


@dataclass
class KataGrade:
    """The grade of one kata of one student: what the journal holds a line of, and the reports a row of."""

    student: str
    kata: str
    outcome: str
    points: float
    max_points: float
    message: str = ""
    file: str | None = None  # relative to the student's folder
    sha256: str | None = None  # of the file graded
    graders: str = ""  # the graders' fingerprint at grading time
    seconds: float = 0.0
    where: list[str] = field(default_factory=list)  # "file:line" of the problem (a syntax error, say)
    # id, title, status, points, worth, weight, message, diagnoses (`{"id", "explanation"}`: "Looks like")
    checks: list[dict] = field(default_factory=list)
    graded_at: str = ""
    isolation: str = ""  # the operating-system sandbox it was graded in (`UNSAFE` if none)
    # what the student's process stood in (`kata.student.walls.Report`: user, namespaces, problem); {} if it never ran
    walls: dict = field(default_factory=dict)
    # A critical check failed (`kata.scoring`): their titles, and the points the cap took off the passed checks'
    critical_failed: list[str] = field(default_factory=list)
    capped_off: float = 0.0

    @property
    def key(self) -> tuple[str, str]:
        return self.student, self.kata

    @property
    def checks_ran(self) -> bool:
        """Whether the kata's checks ran, each with its result, rather than the kata failing as a whole (no
        file, a syntax error, a timeout, a crash)."""
        return self.outcome in (runner.PASSED, runner.FAILED, runner.NOT_IMPLEMENTED) and bool(self.checks)

    def diagnoses(self) -> list[dict]:
        """The classic mistakes the failed checks look like, each once (a journal line written before
        diagnoses were kept has none)."""
        return wording.unique_diagnoses([d for c in self.checks if c["status"] != runner.PASSED
                                         for d in c.get("diagnoses", [])])

    def cap_note(self) -> str:
        """Why the score is below what the passed checks are worth ("" where it is not)."""
        return scoring.cap_note(self.critical_failed) if self.capped_off > 0 else ""

    def reason(self) -> str:
        """Why the kata failed as a whole, for the student: what happened, where, and the message."""
        what = "no file for this kata" if self.outcome == MISSING else self.outcome
        where = f" ({', '.join(self.where[:3])})" if self.where else ""
        return f"{what}{where}: {self.message}"


def graders_fingerprint(kata: Kata) -> str:
    """What a grade depends on besides the student's file: the kata's limits, points and forbidden list,
    its graders (planted mistakes and alternatives aside) and its reference solution."""
    digest = hashlib.sha256(repr((kata.id, kata.points, kata.forbidden, kata.time_budget_s, kata.memory_mb)).encode())
    examples = (kata.mistakes_dir, kata.alternatives_dir)
    files = [p for p in sorted(kata.graders.rglob("*.py")) if not any(d in p.parents for d in examples)]
    for path in [*files, kata.solution]:
        digest.update(str(path.relative_to(kata.root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _clip(text: str, limit: int = MESSAGE_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _link_on_the_way(folder: Path, path: Path) -> Path | None:
    """The first symbolic link among `path` and the folders between `folder` and it, if any."""
    here = folder
    for part in path.relative_to(folder).parts:
        here = here / part
        if here.is_symlink():
            return here
    return None


def submission_hash(folder: Path, path: Path | None) -> str | None:
    """What a kata's grade depends on in the submission: the SHA-256 of the file's content, or of where a
    symbolic link on its way points (a link is graded as a link, whatever it points to)."""
    if path is None:
        return None
    link = _link_on_the_way(folder, path)
    if link is not None:
        return "link:" + hashlib.sha256(f"{link.relative_to(folder)}\0{os.readlink(link)}".encode()).hexdigest()
    return file_hash(path)


def _read_regular(path: Path) -> bytes:
    """The bytes of `path`, a regular file, read without following a link (one made since it was found)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return f.read()


def grade_kata(course: Course, kata: Kata, submission: Submission, *, fingerprint: str | None = None,
               cancel: threading.Event | None = None, isolate: bool = True, pool: Pool | None = None,
               runs_at_once: int = 1, credit: bool = True) -> KataGrade:
    """Grade one kata of one student, in a child process with the kata's limits, on a private copy of the
    student's file (a hard link is read as a copy; a symbolic link is never followed: 0 points). With
    `isolate` the judge runs in the operating-system sandbox (`kata.grading.isolation`), forked from a
    zygote of the sandboxed `pool` if one is given. `credit` (as `runner.run_kata`): the student's file runs
    only where its process has walls (`kata grade --unsafe-no-sandbox` gives it up). Never raises for anything
    the student's files do; `runner.Cancelled` when `cancel` is set."""
    fingerprint = fingerprint or graders_fingerprint(kata)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    sandbox = isolation.described() if isolate else UNSAFE
    path = submission.locate(course).get(kata.id)
    if submission.problem:
        return KataGrade(submission.student, kata.id, UNREADABLE, 0.0, kata.points, submission.problem,
                         graders=fingerprint, graded_at=now, isolation=sandbox)
    if path is None:
        reason = (f"no file for kata {kata.id}: looked for exercises/{kata.dirname}/exercise.py, "
                  f"{kata.dirname}/exercise.py or {kata.dirname}.py at any depth")
        links = sorted(p.relative_to(submission.folder).as_posix() for p in submission.folder.rglob("*")
                       if p.is_symlink())[:3]
        if links:
            reason += f" (symbolic links are not followed: {', '.join(links)})"
        return KataGrade(submission.student, kata.id, MISSING, 0.0, kata.points, reason, graders=fingerprint,
                         graded_at=now, isolation=sandbox)
    relative = path.relative_to(submission.folder).as_posix()
    sha = submission_hash(submission.folder, path)
    link = _link_on_the_way(submission.folder, path)
    try:
        content = None if link is not None else _read_regular(path)
    except OSError as exc:
        content, problem = None, f"{relative} cannot be read as a regular file: {exc.strerror or exc}"
    if link is not None:
        target = os.readlink(link)
        problem = (f"{link.relative_to(submission.folder).as_posix()} is a symbolic link (to {target}), not a "
                   "regular file: links are not followed, submit the file itself")
    if content is None:
        return KataGrade(submission.student, kata.id, NOT_REGULAR, 0.0, kata.points, problem, relative, sha,
                         fingerprint, graded_at=now, isolation=sandbox)
    with tempfile.TemporaryDirectory(prefix="kata-submission-") as private:
        copy = Path(private) / path.name
        copy.write_bytes(content)
        result = runner.run_kata(course, kata, copy, cancel=cancel, isolate=isolate, pool=pool,
                                 runs_at_once=runs_at_once, credit=credit)
    where = [f"{relative}:{f.line}" if Path(f.file) == copy else f"{f.file}:{f.line}" for f in result.frames]
    checks = [{"id": c.id, "title": c.title, "status": c.status, "points": c.points if c.passed else 0.0,
               "worth": c.points, "weight": c.weight, "critical": c.critical, "message": _clip(c.message),
               "diagnoses": wording.unique_diagnoses(c.diagnoses)} for c in result.checks]
    points = result.points
    return KataGrade(submission.student, kata.id, result.outcome, points, kata.points, _clip(result.message),
                     relative, hashlib.sha256(content).hexdigest(), fingerprint, round(result.seconds, 3), where,
                     checks, now, f"{sandbox}; {runner.describe_walls(result.walls)}",
                     {k: result.walls[k] for k in ("user", "namespaces", "problem") if k in result.walls},
                     result.critical_titles(), result.capped_off)


# ---- the class folder -------------------------------------------------------------------------------


def find_submissions(folder: Path, unpack_to: Path, students: Iterable[str] = ()) -> list[Submission]:
    """Every student of the class folder (folders and .zip files, hidden entries aside), in name order;
    zips are unpacked (their .py files only) under `unpack_to`. `students` keeps only those named."""
    entries = sorted(p for p in folder.iterdir() if not p.name.startswith((".", "_"))
                     and (p.is_dir() or p.suffix.lower() == ".zip"))
    unpack_to = unpack_to.resolve()
    entries = [p for p in entries if p.resolve() != unpack_to.parent]  # the output folder, if it is inside
    names = [p.name if p.is_dir() else p.stem for p in entries]
    taken = {n for n in names if names.count(n) > 1}
    submissions = []
    for entry, name in zip(entries, names, strict=True):
        student = entry.name if name in taken else name  # alice/ and alice.zip: "alice" and "alice.zip"
        if entry.is_symlink():  # never followed: it could lead to another student's work, or anywhere
            submissions.append(Submission(student, entry, None, f"{entry.name} is a symbolic link (to "
                                          f"{os.readlink(entry)}), not a folder or a .zip: links are not followed"))
        elif entry.is_dir():
            submissions.append(Submission(student, entry, entry))
        else:
            submissions.append(_unzip(student, entry, unpack_to / student))
    wanted = set(students)
    if wanted:
        unknown = wanted - {s.student for s in submissions}
        if unknown:
            raise GradeError(f"no submission named {', '.join(sorted(unknown))} in {folder}")
        submissions = [s for s in submissions if s.student in wanted]
    return submissions


def _unzip(student: str, archive: Path, target: Path) -> Submission:
    """Unpack the .py files of a student's zip (again each run: the zip may have been replaced)."""
    shutil.rmtree(target, ignore_errors=True)
    try:
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                name = Path(info.filename)
                if info.is_dir() or name.suffix != ".py" or name.is_absolute() or ".." in name.parts:
                    continue
                if info.file_size > ZIP_MEMBER_LIMIT:
                    continue
                dest = target / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(zf.read(info)[:ZIP_MEMBER_LIMIT])
    except (zipfile.BadZipFile, OSError, RuntimeError, EOFError) as exc:
        return Submission(student, archive, None, f"{archive.name} could not be unpacked: {exc}")
    target.mkdir(parents=True, exist_ok=True)
    return Submission(student, archive, target)


# ---- the journal ------------------------------------------------------------------------------------


class Journal:
    """The finished grades of a class, one JSON line each, appended and flushed as each is known.

    Each line is signed (HMAC-SHA256, after a tab) with `key`, the instructor's (`read_key`), or else a key
    kept beside it (`.kata-grade.key`, readable by its owner only). The graded units see neither: they run
    in a sandbox without the output folder. A line without a valid signature (forged, edited, signed with
    another key, or cut short) is not used: its unit is graded again. A key beside the journal protects it
    only from the units; whoever can write the folder can re-sign it, so a shard's journal, which a merge
    trusts, is signed with the instructor's key, kept elsewhere."""

    KEY = ".kata-grade.key"

    def __init__(self, path: Path, key: bytes | None = None):
        self.path = path
        self._key = key
        self.signed_otherwise = 0  # lines of the last `load` whole, but signed with another key

    @property
    def key(self) -> bytes:
        if self._key is None:
            key_path = self.path.with_name(self.KEY)
            try:
                fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            except FileExistsError:
                try:
                    self._key = bytes.fromhex(key_path.read_text(encoding="ascii").strip())
                except (ValueError, UnicodeDecodeError):
                    raise GradeError(f"{key_path} is not a journal key: delete it, and every line of the journal "
                                     "will be graded again") from None
            else:
                with os.fdopen(fd, "w", encoding="ascii") as f:
                    self._key = secrets.token_bytes(32)
                    f.write(self._key.hex() + "\n")
        return self._key

    def _sign(self, payload: str) -> str:
        return hmac.new(self.key, payload.encode("utf-8"), hashlib.sha256).hexdigest()

    def load(self) -> tuple[dict[tuple[str, str], KataGrade], int]:
        """The grades by (student, kata), the last line for each winning, and the number of lines that
        could not be used (cut short by an interruption, or not signed with this journal's key). Of those,
        `signed_otherwise` counts the whole lines with a signature of another key: a crash cuts a line's
        end, its signature, so these were written or edited on purpose (or with another key)."""
        grades: dict[tuple[str, str], KataGrade] = {}
        unreadable = self.signed_otherwise = 0
        with contextlib.suppress(FileNotFoundError), open(self.path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                payload, _, mac = line.rstrip("\n").rpartition("\t")
                try:
                    grade = KataGrade(**json.loads(payload))
                except (ValueError, TypeError):
                    unreadable += 1
                    continue
                if not hmac.compare_digest(mac, self._sign(payload)):
                    unreadable += 1
                    self.signed_otherwise += len(mac) == 64
                    continue
                grades[grade.key] = grade
        return grades, unreadable

    def append(self, grade: KataGrade) -> None:
        payload = json.dumps(asdict(grade), ensure_ascii=False)
        line = payload + "\t" + self._sign(payload) + "\n"
        with open(self.path, "a", encoding="utf-8") as f:
            # A line cut short by a crash is followed by a newline-started one, so it spoils no other.
            if f.tell() and not self._ends_with_newline():
                f.write("\n")
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"

    def set_aside(self) -> Path | None:
        """Move the journal aside (a fresh start keeps the old results, renamed)."""
        if not self.path.exists():
            return None
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        aside = self.path.with_name(f"results-{stamp}.jsonl")
        self.path.rename(aside)
        return aside


KEY_MIN_CHARS = 32


def read_key(path: Path, *folders: Path) -> bytes:
    """The instructor's journal key (`--key-file`): the whole file, at least KEY_MIN_CHARS characters, kept
    outside the output `folders` it signs or verifies (there, whoever can write them could replace it)."""
    path = path.resolve()
    for folder in folders:
        if folder.resolve() in path.parents:
            raise GradeError(f"--key-file {path} is inside the output folder {folder}: keep the key elsewhere "
                             "(whoever can write that folder could replace it and re-sign the journal)")
    try:
        key = path.read_bytes().strip()
    except OSError as exc:
        raise GradeError(f"--key-file {path} cannot be read: {exc.strerror or exc}") from None
    if len(key) < KEY_MIN_CHARS:
        raise GradeError(f"--key-file {path} holds {len(key)} characters, fewer than {KEY_MIN_CHARS}: make one with "
                         "`openssl rand -hex 32 > FILE`")
    return key


# ---- the class --------------------------------------------------------------------------------------


@dataclass
class ClassGrades:
    """The grades of a class after a run: every (student, kata) graded so far."""

    katas: list[Kata]
    submissions: list[Submission]
    grades: dict[tuple[str, str], KataGrade]
    graded: int = 0  # units graded by this run
    reused: int = 0  # units whose result came from the journal
    unreadable_lines: int = 0
    interrupted: bool = False
    seconds: float = 0.0
    reports: dict[str, Path] = field(default_factory=dict)
    shard: Shard | None = None  # this run graded only the units of this shard

    @property
    def units(self) -> list[tuple[str, str]]:
        """The (student, kata) pairs this run is to grade: every one, or its shard's."""
        return [(s.student, k.id) for s in self.submissions for k in self.katas
                if self.shard is None or self.shard.holds(s.student, k.id)]
    isolation: str = ""  # the sandbox of the units graded by this run (`UNSAFE` if none)

    @property
    def total_units(self) -> int:
        return len(self.units)

    @property
    def complete(self) -> bool:
        return all(unit in self.grades for unit in self.units)

    @property
    def internal_errors(self) -> list[KataGrade]:
        return [g for g in self.grades.values() if g.outcome == runner.INTERNAL_ERROR]

    def student_total(self, student: str) -> float:
        return sum(self.grades[(student, k.id)].points for k in self.katas if (student, k.id) in self.grades)

    @property
    def max_total(self) -> float:
        return sum(k.points for k in self.katas)


def lock_output(out: Path) -> FileLock:
    """Create `out` and take its lock (released by the caller): one `kata grade` writes a folder at a time."""
    out.mkdir(parents=True, exist_ok=True)
    lock = FileLock(out / ".kata-grade.lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise GradeError(f"another `kata grade` is writing to {out}: wait for it, or choose another --out") from None
    return lock


def _reusable(grade: KataGrade | None, sha: str | None, fingerprint: str, isolated: bool) -> bool:
    return (grade is not None and grade.outcome != runner.INTERNAL_ERROR and grade.sha256 == sha
            and grade.graders == fingerprint and (not (grade.isolation == "" or grade.isolation.startswith(UNSAFE))
                                                  or not isolated))


def interrupt_on(*names: str) -> None:
    """Stop as Ctrl-C does (ending the grading children, keeping what is finished) on these signals too,
    where the platform has them (Windows has no SIGHUP): a cluster ends a Job's pod with SIGTERM."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    for name in names:
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), interrupt)


def grade_class(course: Course, submissions: list[Submission], katas: list[Kata], out: Path, *, jobs: int = 1,
                restart: bool = False, on_start: Callable[[int, int], None] | None = None,
                on_result: Callable[[KataGrade, bool], None] | None = None, shard: Shard | None = None,
                unsafe_no_sandbox: bool = False, key: bytes | None = None) -> ClassGrades:
    """Grade every kata of every submission (or the units of `shard`), `jobs` units at a time, journaled in `out`.

    Each unit runs in the operating-system sandbox (`kata.grading.isolation`); where there is none,
    `GradeError`, unless `unsafe_no_sandbox` (the reports then say so, and a later run with the sandbox
    grades those units again). The journal is signed with `key` (`read_key`), else with a key of its own
    beside it; a shard needs `key`, with which `kata grade merge` verifies it. `on_start(to_grade, reused)`
    is called once the work is known and `on_result(grade, reused)` for each unit. Ctrl-C stops the run (the
    running children are ended): what was finished is kept, and the result says `interrupted`. The reports
    are written in every case."""
    if shard is not None and key is None:
        raise GradeError("--shard needs --key-file: the merge trusts a shard's journal only if it is signed with a "
                         "key kept outside the shard's folder, the same for every shard and the merge")
    support = isolation.probe()
    if not support.available and not unsafe_no_sandbox:
        raise GradeError(f"grading for credit needs an operating-system sandbox, and there is none here: "
                         f"{support.problem}. (`--unsafe-no-sandbox` grades without one: the student's code then "
                         "runs with your permissions, and the reports say so.)")
    isolate = support.available and not unsafe_no_sandbox
    lock = lock_output(out)
    try:
        started = time.perf_counter()
        journal = Journal(out / JOURNAL, key)
        if restart:
            journal.set_aside()
        previous, unreadable = journal.load()
        fingerprints = {k.id: graders_fingerprint(k) for k in katas}
        state = ClassGrades(katas, submissions, {}, unreadable_lines=unreadable, shard=shard,
                            isolation=isolation.described() if isolate else UNSAFE)
        todo: list[tuple[Kata, Submission]] = []
        for submission in submissions:
            files = submission.locate(course)
            for kata in katas:
                if shard is not None and not shard.holds(submission.student, kata.id):
                    continue
                path = files.get(kata.id)
                old = previous.get((submission.student, kata.id))
                sha = submission_hash(submission.folder, path) if path and submission.folder else None
                if _reusable(old, sha, fingerprints[kata.id], isolate):
                    state.grades[old.key] = old
                    state.reused += 1
                else:
                    todo.append((kata, submission))
        if on_start:
            on_start(len(todo), state.reused)
        if on_result:
            for grade in state.grades.values():
                on_result(grade, True)
        todo.sort(key=lambda unit: course.index(unit[0]))  # kata by kata: a warm zygote serves a kata's units
        state.interrupted = _run_units(course, todo, fingerprints, jobs, journal, state, on_result, isolate)
        state.seconds = time.perf_counter() - started
        state.reports = write_reports(out, state)
        return state
    finally:
        lock.release()


def _run_units(course: Course, todo: list[tuple[Kata, Submission]], fingerprints: dict[str, str], jobs: int,
               journal: Journal, state: ClassGrades, on_result, isolate: bool) -> bool:
    """Grade the units, journaling each, through a sandboxed pool of `jobs` zygotes where units can have
    one (`kata.pool`); True if interrupted (Ctrl-C)."""
    with open_pool(course, jobs, sandboxed=True) if isolate and todo else contextlib.nullcontext() as warm:
        return _run_units_with(course, todo, fingerprints, jobs, journal, state, on_result, isolate, warm)


def _run_units_with(course: Course, todo: list[tuple[Kata, Submission]], fingerprints: dict[str, str], jobs: int,
                    journal: Journal, state: ClassGrades, on_result, isolate: bool, warm: Pool | None) -> bool:
    cancel = threading.Event()

    def unit(kata: Kata, submission: Submission) -> KataGrade:
        try:
            return grade_kata(course, kata, submission, fingerprint=fingerprints[kata.id], cancel=cancel,
                              isolate=isolate, pool=warm, runs_at_once=jobs, credit=isolate)
        except runner.Cancelled:
            raise
        except Exception as exc:  # the grading's own failure (no processes left, say): graded again next run
            return KataGrade(submission.student, kata.id, runner.INTERNAL_ERROR, 0.0, kata.points,
                             f"the grading could not run: {type(exc).__name__}: {exc}",
                             graders=fingerprints[kata.id], isolation=state.isolation)

    recorded: set[Future] = set()

    def record(future: Future) -> None:
        grade = future.result()
        journal.append(grade)
        recorded.add(future)
        state.grades[grade.key] = grade
        state.graded += 1
        if on_result:
            on_result(grade, False)

    workers = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="kata-grade")
    futures = [workers.submit(unit, kata, submission) for kata, submission in todo]
    try:
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in done:
                record(future)
    except KeyboardInterrupt:
        cancel.set()
        workers.shutdown(wait=True, cancel_futures=True)
        # What finished, also while the others were being stopped, is kept.
        for future in futures:
            if future not in recorded and future.done() and not future.cancelled() and future.exception() is None:
                record(future)
        return True
    workers.shutdown(wait=True)
    return False


# ---- the reports ------------------------------------------------------------------------------------


def _cell(text: str, limit: int = 300) -> str:
    """Free text for a spreadsheet cell: one line, clipped."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def no_formulas(rows: list[list]) -> list[list]:
    """The rows with no text cell a spreadsheet would read as a formula: any of them can hold a name the
    student chose (a folder, a file, a message), so every column is escaped, not only the ones that usually do."""
    return [[f"'{c}" if isinstance(c, str) and c[:1] in ("=", "+", "-", "@", "\t", "\r") else c for c in row]
            for row in rows]


def report_rows(state: ClassGrades) -> dict[str, list[list]]:
    """The rows of each CSV report, header first."""
    grades = [["student", *[k.id for k in state.katas], "total", "max", "complete"]]
    katas = [["student", "kata", "outcome", "points", "max_points", "message", "diagnoses", "where", "file", "sha256",
              "seconds", "isolation", "capped"]]
    checks = [["student", "kata", "check", "title", "status", "points", "worth", "message", "diagnosis"]]
    for submission in state.submissions:
        row = [_cell(submission.student)]
        complete = True
        for kata in state.katas:
            grade = state.grades.get((submission.student, kata.id))
            complete &= grade is not None
            row.append("" if grade is None else _number(grade.points))
            if grade is None:
                continue
            katas.append([_cell(grade.student), grade.kata, grade.outcome, _number(grade.points),
                          _number(grade.max_points), _cell(grade.message), _explained(grade.diagnoses()),
                          _cell(" ".join(grade.where)), grade.file or "", grade.sha256 or "", grade.seconds,
                          grade.isolation, _cell(grade.cap_note())])
            checks += [[_cell(grade.student), grade.kata, c["id"], _cell(c["title"]), c["status"],
                        _number(c["points"]), _number(c["worth"]), _cell(c["message"]),
                        _explained(c.get("diagnoses", []))] for c in grade.checks]
            if grade.capped_off > 0:  # the checks' points, less the cap's row, add up to the kata's
                checks.append([_cell(grade.student), grade.kata, "cap", _cell(grade.cap_note()), "capped",
                               _number(-grade.capped_off), 0, "", ""])
        grades.append([*row, _number(state.student_total(submission.student)), _number(state.max_total),
                       "yes" if complete else "no"])
    return {"grades.csv": no_formulas(grades), "katas.csv": no_formulas(katas), "checks.csv": no_formulas(checks)}


def _explained(diagnoses: list[dict]) -> str:
    """The diagnoses' explanations in one cell ("Looks like" each), separated by " | "."""
    return _cell(" | ".join(d["explanation"] for d in diagnoses), limit=600)


def _number(value: float) -> float | int:
    rounded = round(value, 4)
    return int(rounded) if rounded == int(rounded) else rounded


def report_json(state: ClassGrades) -> dict:
    return {
        "schema": SCHEMA,
        "shard": None if state.shard is None else str(state.shard),
        "complete": state.complete,
        "interrupted": state.interrupted,
        "katas": [{"id": k.id, "title": k.title, "points": k.points} for k in state.katas],
        "max_total": state.max_total,
        "students": [
            {"student": s.student, "source": str(s.source), "total": _number(state.student_total(s.student)),
             "katas": [asdict(state.grades[(s.student, k.id)]) for k in state.katas
                       if (s.student, k.id) in state.grades]}
            for s in state.submissions],
        "graded": state.graded, "reused": state.reused, "seconds": round(state.seconds, 1),
        "isolation": state.isolation,
    }


def write_reports(out: Path, state: ClassGrades) -> dict[str, Path]:
    """grades.csv (a row per student), katas.csv (per student and kata), checks.csv (per check),
    grades.json (everything) and, for a whole class (a shard's students are only part graded: `kata grade
    merge` writes theirs), each student's feedback (`kata.feedback`); each file replaced whole (a reader
    never sees half a file)."""
    from kata import feedback  # not at the top: it uses kata.render, which imports this module

    written = {}
    for name, rows in report_rows(state).items():
        buffer = io.StringIO()
        csv.writer(buffer).writerows(rows)
        written[name] = _replace(out / name, buffer.getvalue())
    written["grades.json"] = _replace(out / "grades.json", json.dumps(report_json(state), indent=2,
                                                                       ensure_ascii=False) + "\n")
    if state.shard is None:
        (out / feedback.FOLDER).mkdir(exist_ok=True)
        for submission in state.submissions:
            md, page = feedback.paths(out, submission.student)
            _replace(md, feedback.markdown(state, submission.student))
            _replace(page, feedback.page(state, submission.student))
        written[feedback.FOLDER + "/"] = out / feedback.FOLDER
    return written


def _replace(path: Path, text: str) -> Path:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path
