"""Grading a class in parts on many machines (`kata grade --shard I/N`), and putting the parts together
(`kata grade merge OUT SHARD_DIRS...`).

Each shard grades the units (student, kata) that hash to it (`kata.grade.Shard`) into its own output
folder, with its own journal and reports. Every shard and the merge are given one key, kept outside the
shards' folders (`--key-file`, `kata.grade.read_key`): the shards sign their journals with it and the
merge reads each journal through `Journal.load` with it, never with a key found in a shard's folder
(whoever can write the folder could have re-signed its journal with that). A shard whose journal holds
lines signed with another key is refused, named. The merge takes the class a shard graded from its
`grades.json`, checks that the shards are the N parts of one class graded with the same graders, and
writes the usual reports and one journal holding every result (signed with the key) into OUT, which
`kata grade SUBMISSIONS --out OUT --key-file KEY` can then go on from (a resubmitted file is graded
again, nothing else)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from kata.course import Course
from kata.grade import (
    JOURNAL,
    SCHEMA,
    ClassGrades,
    GradeError,
    Journal,
    KataGrade,
    Shard,
    Submission,
    lock_output,
    write_reports,
)


def _read_shard(folder: Path) -> tuple[Shard, dict]:
    """A shard's grades.json, and which shard it is."""
    path = folder / "grades.json"
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GradeError(f"{folder} is not the output of `kata grade --shard`: {path}: {exc}") from None
    if report.get("schema") != SCHEMA or not report.get("shard"):
        raise GradeError(f"{path} is not the report of a `kata grade --shard I/N` run")
    return Shard.parse(report["shard"]), report


def _isolation(shards: list[tuple[Path, Shard, dict]]) -> str:
    """What the shards' reports say of their isolation: theirs if one, else each shard's (one machine may
    have had no sandbox or no memory cgroup: the merged report must not hide it)."""
    said = sorted((shard.index, str(shard), report.get("isolation", "")) for _, shard, report in shards)
    if len({isolation for _, _, isolation in said}) == 1:
        return said[0][2]
    return " | ".join(f"shard {name}: {isolation or 'not recorded'}" for _, name, isolation in said)


def merge_shards(course: Course, out: Path, folders: list[Path], key: bytes | None) -> ClassGrades:
    """The grades of the N shards in `folders`, their journals verified with `key`, written to `out` (reports
    and journal). A GradeError without `key`, when they are not the N parts of one class (a shard missing or
    twice, other students or katas, or a kata graded with other graders in another shard), or when a journal
    holds lines signed with another key."""
    if key is None:
        raise GradeError("kata grade merge needs --key-file (or KATA_GRADE_KEY_FILE): the key the shards signed "
                         "their journals with")
    started = time.perf_counter()
    shards = [(folder, *_read_shard(folder)) for folder in folders]
    counts = {shard.count for _, shard, _ in shards}
    if len(counts) != 1:
        raise GradeError("the shards split the class in different numbers of parts: "
                         + ", ".join(f"{folder} is {shard}" for folder, shard, _ in shards))
    count = counts.pop()
    indexes = sorted(shard.index for _, shard, _ in shards)
    if indexes != list(range(count)):
        missing = sorted(set(range(count)) - set(indexes))
        twice = sorted({i for i in indexes if indexes.count(i) > 1})
        problems = [f"{what} {', '.join(f'{i}/{count}' for i in which)}"
                    for what, which in (("missing", missing), ("given twice:", twice)) if which]
        raise GradeError(f"the shards are not the {count} parts of the class: {'; '.join(problems)}")
    first_folder, _, first = shards[0]
    students = [(s["student"], s["source"]) for s in first["students"]]
    kata_ids = [k["id"] for k in first["katas"]]
    for folder, _, report in shards[1:]:  # the class folder may be mounted elsewhere on each machine: names count
        if [s["student"] for s in report["students"]] != [student for student, _ in students]:
            raise GradeError(f"{folder} graded other students than {first_folder}: shards must grade one class folder")
        if [k["id"] for k in report["katas"]] != kata_ids:
            raise GradeError(f"{folder} graded other katas than {first_folder}: give every shard the same --katas")
    try:
        katas = [course.find(kata_id) for kata_id in kata_ids]
    except KeyError as exc:
        raise GradeError(f"the shards graded a kata this course does not have: {exc.args[0]}") from None

    names = {student for student, _ in students}
    grades: dict[tuple[str, str], KataGrade] = {}
    unreadable = 0
    for folder, shard, _ in shards:
        journal = Journal(folder / JOURNAL, key)
        loaded, bad = journal.load()
        if journal.signed_otherwise:
            raise GradeError(f"{folder / JOURNAL}: {journal.signed_otherwise} line(s) not signed with the key of "
                             "--key-file (written or edited by someone else, or that shard was graded with another "
                             "key): nothing merged. Grade that shard again with the key (--restart), then merge")
        unreadable += bad
        # A journal may also hold lines of earlier runs of that folder: only the shard's own units count.
        grades.update({key: g for key, g in loaded.items()
                       if key[0] in names and key[1] in kata_ids and shard.holds(*key)})
    for kata in katas:
        fingerprints = {g.graders for g in grades.values() if g.kata == kata.id}
        if len(fingerprints) > 1:
            raise GradeError(f"kata {kata.id} was graded with different graders in different shards "
                             "(the course changed between them): grade those shards again")

    lock = lock_output(out)
    try:
        journal = Journal(out / JOURNAL, key)
        journal.set_aside()
        order = {(s, k): i for i, (s, k) in enumerate((s, k) for s, _ in students for k in kata_ids)}
        for key in sorted(grades, key=order.__getitem__):
            journal.append(grades[key])
        submissions = [Submission(student, Path(source), None) for student, source in students]
        state = ClassGrades(katas, submissions, grades, reused=len(grades), unreadable_lines=unreadable,
                            isolation=_isolation(shards))
        state.seconds = time.perf_counter() - started
        state.reports = write_reports(out, state)
        return state
    finally:
        lock.release()
