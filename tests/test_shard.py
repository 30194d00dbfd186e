"""`kata grade --shard I/N` and `kata grade merge`: the N shards of a class, graded by the real executable,
merge into exactly the grades of the unsharded run; the Canvas gradebook of both is the same."""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import os
import shutil
import subprocess
import sys
from itertools import product
from pathlib import Path

import pytest
from rich.console import Console

from kata import render
from kata.course import load_course
from kata.grade import JOURNAL, SCHEMA, Journal, KataGrade, Shard
from kata.shard import merge_shards
from tests.conftest import REPO, copy_course
from tests.test_cli import kata_exe
from tests.test_grade import planted, reference, write

SHARDS = 3
KEY = b"an instructor's key of 32 chars!"


def make_small_class(root: Path, folder: Path) -> None:
    """Four students of katas 9.1 and 9.2: full marks, partial marks, broken, absent."""
    write(folder / "alice" / "9.1-softmax.py", reference(root, "9.1"))
    write(folder / "alice" / "9.2-layer-norm.py", reference(root, "9.2"))
    write(folder / "bob" / "9.1-softmax.py", planted(root, "9.1", "no_max_subtraction"))
    write(folder / "bob" / "9.2-layer-norm.py", planted(root, "9.2", "unbiased_variance"))
    write(folder / "carol" / "9.1-softmax.py", "def softmax(x, dim=-1):\n    return x.exp( / 2\n")
    write(folder / "dave" / "notes.txt", "nothing handed in")


def kata(*args: str, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([kata_exe(), *args], capture_output=True, text=True, env=env, timeout=timeout)


def unit_results(report: dict) -> dict[tuple[str, str], dict]:
    """Each unit's result as the reports give it, without when it was graded and how long it took."""
    return {(s["student"], k["kata"]): {f: v for f, v in k.items() if f not in ("graded_at", "seconds")}
            for s in report["students"] for k in s["katas"]}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("shard")
    root = copy_course(base / "course")
    folder = base / "class"
    make_small_class(root, folder)
    roster = base / "roster.csv"  # a Canvas gradebook export, as an instructor downloads it
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,Old quiz (77)\n"
                      "    Points Possible,,,,,5\n"
                      "\"Liddell, Alice\",101,S-1,alice,Mon,4\n\"Builder, Bob\",102,S-2,bob,Tue,5\n"
                      "\"Carroll, Carol\",103,S-3,carol,Mon,3\n\"Dee, Dave\",104,S-4,dave,Tue,\n"
                      "\"Absent, Eve\",105,S-5,eve,Wed,2\n")  # no folder: handed nothing in
    key = base / "grade.key"  # the instructor's, outside every output folder
    key.write_text("6b61746120677261646520746573742073686172646b6579\n")
    env = {**os.environ, "KATA_COURSE": str(root), "KATA_PROGRESS": str(base / "p.json"),
           "KATA_GRADE_KEY_FILE": str(key)}
    canvas = ("--format", "canvas", "--roster", str(roster), "--assignment", "Katas (555)")
    whole = kata("grade", str(folder), "--katas", "9.1,9.2", "--jobs", "2", "--out", str(base / "whole"), "--json",
                 *canvas, env=env)
    assert whole.returncode == 0, whole.stderr[-3000:]
    shards = []
    for index in range(SHARDS):
        done = kata("grade", str(folder), "--katas", "9.1,9.2", "--jobs", "2", "--shard", f"{index}/{SHARDS}",
                    "--out", str(base / f"shard-{index}"), "--json", env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        shards.append(json.loads(done.stdout))
    merged = kata("grade", "merge", str(base / "merged"), *[str(base / f"shard-{i}") for i in range(SHARDS)],
                  "--json", *canvas, env=env)
    assert merged.returncode == 0, merged.stderr[-3000:]
    return {"base": base, "folder": folder, "env": env, "key": key, "whole": json.loads(whole.stdout), "shards": shards,
            "merged": json.loads(merged.stdout), "said": {"whole": whole.stderr, "merged": merged.stderr}}


def test_the_union_of_the_shards_is_the_unsharded_run(graded):
    whole = unit_results(graded["whole"])
    assert len(whole) == 8 and whole[("alice", "9.1")]["points"] == 10 and whole[("bob", "9.1")]["points"] == 7.5
    assert whole[("carol", "9.1")]["outcome"] == "syntax-error" and whole[("dave", "9.2")]["outcome"] == "missing"
    parts = [unit_results(report) for report in graded["shards"]]
    assert all(parts), "every shard has units (8 units in 3 parts)"
    assert sum(len(p) for p in parts) == 8, "no unit graded twice"
    union = {key: value for part in parts for key, value in part.items()}
    assert union == whole  # outcomes, points, messages and every check's status and points
    merged = graded["merged"]
    assert unit_results(merged) == whole and merged["complete"] and merged["shard"] is None
    assert merged["isolation"] == graded["whole"]["isolation"] and merged["isolation"].startswith("bubblewrap")
    assert [s["total"] for s in merged["students"]] == [s["total"] for s in graded["whole"]["students"]]
    for name in ("grades.csv", "katas.csv", "checks.csv"):
        def rows(folder: str, name: str = name) -> list[list[str]]:
            with open(graded["base"] / folder / name, newline="") as f:
                table = list(csv.reader(f))
                if name == "katas.csv":  # how long a unit took differs from run to run
                    seconds = table[0].index("seconds")
                    table = [row[:seconds] + row[seconds + 1:] for row in table]
                return table
        assert rows("merged") == rows("whole"), name
    # Each student's feedback is written for the whole class: by the merge, not by a shard, which holds part.
    feedback = sorted((graded["base"] / "whole" / "feedback").iterdir())
    assert [p.name for p in feedback] == sorted(f"{s}.{x}" for s in ("alice", "bob", "carol", "dave")
                                                for x in ("html", "md"))
    assert all((graded["base"] / "merged" / "feedback" / p.name).read_text() == p.read_text() for p in feedback)
    assert not [i for i in range(SHARDS) if (graded["base"] / f"shard-{i}" / "feedback").exists()]


def test_a_shard_reports_only_its_units_and_each_is_complete(graded):
    for index, report in enumerate(graded["shards"]):
        shard = Shard(index, SHARDS)
        assert report["shard"] == f"{index}/{SHARDS}" and report["complete"]
        assert not (graded["base"] / f"shard-{index}" / Journal.KEY).exists(), "signed with the instructor's key"
        assert set(unit_results(report)) == {(s, k) for s, k in product(["alice", "bob", "carol", "dave"],
                                                                         ["9.1", "9.2"]) if shard.holds(s, k)}


def test_the_merged_journal_is_one_to_go_on_from(graded):
    done = kata("grade", str(graded["folder"]), "--katas", "9.1,9.2", "--out", str(graded["base"] / "merged"),
                "--json", env=graded["env"])
    report = json.loads(done.stdout)
    assert done.returncode == 0 and (report["graded"], report["reused"]) == (0, 8)


def test_the_canvas_gradebook_maps_students_through_the_roster(graded):
    for folder in ("whole", "merged"):
        with open(graded["base"] / folder / "canvas.csv", newline="") as f:
            rows = list(csv.reader(f))
        assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Katas (555)"]
        assert rows[1] == ["Points Possible", "", "", "", "", "20"]
        assert rows[2:] == [["Liddell, Alice", "101", "S-1", "alice", "Mon", "20"],
                            ["Builder, Bob", "102", "S-2", "bob", "Tue", "11.25"],  # 7.5 + 10 * 9/24
                            ["Carroll, Carol", "103", "S-3", "carol", "Mon", "0"],
                            ["Dee, Dave", "104", "S-4", "dave", "Tue", "0"],
                            ["Absent, Eve", "105", "S-5", "eve", "Wed", "0"]]  # left out, she would keep no grade
        assert "canvas.csv: 1 on the roster handed nothing in, 0 (--absent-blank leaves them blank): Absent, Eve" \
            in " ".join(graded["said"][folder].split())


def test_merge_refuses_what_is_not_the_n_shards_of_one_class(graded, tmp_path):
    base, env = graded["base"], graded["env"]
    missing = kata("grade", "merge", str(tmp_path / "m1"), str(base / "shard-0"), str(base / "shard-2"), env=env)
    assert missing.returncode == 2 and "missing 1/3" in missing.stderr, missing.stderr
    twice = kata("grade", "merge", str(tmp_path / "m2"), str(base / "shard-0"), str(base / "shard-1"),
                 str(base / "shard-1"), env=env)
    assert twice.returncode == 2 and "given twice: 1/3" in twice.stderr and "missing 2/3" in twice.stderr
    unsharded = kata("grade", "merge", str(tmp_path / "m3"), str(base / "whole"), env=env)
    assert unsharded.returncode == 2 and "not the report of a `kata grade --shard" in unsharded.stderr
    assert not (tmp_path / "m1").exists() and not (tmp_path / "m3").exists(), "nothing written when refused"
    for change, message in ((lambda r: r["students"].pop(), "graded other students than"),
                            (lambda r: r["katas"].pop(), "graded other katas than")):
        other = tmp_path / f"other-{message.split()[2]}"
        shutil.copytree(base / "shard-2", other)
        report = json.loads((other / "grades.json").read_text())
        change(report)
        (other / "grades.json").write_text(json.dumps(report))
        refused = kata("grade", "merge", str(tmp_path / "m4"), str(base / "shard-0"), str(base / "shard-1"), str(other),
                       env=env)
        assert refused.returncode == 2 and message in refused.stderr, refused.stderr
    bad = kata("grade", str(graded["folder"]), "--shard", "3/3", env=env)
    assert bad.returncode == 2 and "I must be from 0 to N-1" in bad.stderr


def _forge(folder: Path, student: str, kata_id: str, sign) -> None:
    """Append to a shard's journal the student's line for the kata, turned into full marks and signed by `sign`."""
    journal = folder / JOURNAL
    payload = next(json.loads(line.rpartition("\t")[0]) for line in journal.read_text().splitlines()
                   if line.startswith(f'{{"student": "{student}", "kata": "{kata_id}"'))
    payload.update(outcome="passed", points=payload["max_points"], message="")
    text = json.dumps(payload, ensure_ascii=False)
    with open(journal, "a", encoding="utf-8") as f:
        f.write(text + "\t" + sign(text.encode()) + "\n")


def test_a_shard_journal_re_signed_with_a_key_from_its_folder_is_refused_by_the_merge(graded, tmp_path):
    """Whoever can write a shard's folder forges carol's 0 into 10 and re-signs it with every key the folder
    holds (or, holding none, one of their own put there): the merge verifies with the instructor's key only,
    and refuses that shard, named. Signed with the instructor's key, the same line would be merged."""
    base, env = graded["base"], graded["env"]
    holder = next(i for i in range(SHARDS) if Shard(i, SHARDS).holds("carol", "9.1"))
    for i in range(SHARDS):
        shutil.copytree(base / f"shard-{i}", tmp_path / f"shard-{i}")
    folder = tmp_path / f"shard-{holder}"
    found = [p for p in folder.rglob("*") if p.is_file() and "key" in p.name.lower()]
    if not found:
        (folder / Journal.KEY).write_text("00" * 32 + "\n")
        found = [folder / Journal.KEY]
    for key_file in found:
        key = bytes.fromhex(key_file.read_text().strip())
        _forge(folder, "carol", "9.1", lambda text, key=key: hmac.new(key, text, hashlib.sha256).hexdigest())
    shards = [str(tmp_path / f"shard-{i}") for i in range(SHARDS)]
    refused = kata("grade", "merge", str(tmp_path / "merged"), *shards, "--json", env=env)
    said = " ".join(refused.stderr.split())
    assert refused.returncode == 2, refused.stdout[-2000:]
    assert f"{folder / JOURNAL}: {len(found)} line(s) not signed with the key of --key-file" in said, said
    assert "nothing merged" in said and not (tmp_path / "merged").exists()

    # The forgery itself is well formed: signed with the instructor's key it would be taken, so the key decides.
    shutil.rmtree(folder)
    shutil.copytree(base / f"shard-{holder}", folder)
    secret = graded["key"].read_bytes().strip()
    _forge(folder, "carol", "9.1", lambda text: hmac.new(secret, text, hashlib.sha256).hexdigest())
    taken = kata("grade", "merge", str(tmp_path / "merged"), *shards, "--json", env=env)
    assert taken.returncode == 0, taken.stderr[-2000:]
    assert unit_results(json.loads(taken.stdout))[("carol", "9.1")]["points"] == 10


def test_shards_and_the_merge_need_a_key_kept_outside_their_folders(graded, tmp_path):
    env = {k: v for k, v in graded["env"].items() if k != "KATA_GRADE_KEY_FILE"}
    folder, shards = str(graded["folder"]), [str(graded["base"] / f"shard-{i}") for i in range(SHARDS)]
    bare = kata("grade", folder, "--shard", "0/3", "--out", str(tmp_path / "s0"), env=env)
    assert bare.returncode == 2 and "--shard needs --key-file" in " ".join(bare.stderr.split()), bare.stderr
    merge = kata("grade", "merge", str(tmp_path / "m"), *shards, env=env)
    assert merge.returncode == 2 and "kata grade merge needs --key-file" in " ".join(merge.stderr.split())
    (tmp_path / "s1").mkdir()
    inside = tmp_path / "s1" / "grade.key"
    inside.write_text("a" * 64)
    within = kata("grade", folder, "--shard", "1/3", "--out", str(tmp_path / "s1"), "--key-file", str(inside), env=env)
    assert within.returncode == 2 and "is inside the output folder" in " ".join(within.stderr.split())
    in_a_shard = kata("grade", "merge", str(tmp_path / "m"), *shards[:2], str(tmp_path / "s1"), "--key-file",
                      str(inside), env=env)
    assert in_a_shard.returncode == 2 and f"is inside the output folder {tmp_path / 's1'}" in \
        " ".join(in_a_shard.stderr.split())
    short = tmp_path / "short.key"
    short.write_text("secret\n")
    weak = kata("grade", "merge", str(tmp_path / "m"), *shards, "--key-file", str(short), env=env)
    assert weak.returncode == 2 and "holds 6 characters, fewer than 32" in " ".join(weak.stderr.split())
    assert not (tmp_path / "m").exists() and not (tmp_path / "s0").exists()


def test_a_journal_signed_with_the_instructors_key_leaves_no_key_beside_it(tmp_path):
    journal = Journal(tmp_path / JOURNAL, b"k" * 32)
    journal.append(KataGrade("ann", "9.1", "passed", 10.0, 10.0))
    assert sorted(p.name for p in tmp_path.iterdir()) == [JOURNAL]
    assert journal.load()[0][("ann", "9.1")].points == 10
    other = Journal(tmp_path / JOURNAL, b"o" * 32)
    assert other.load() == ({}, 1) and other.signed_otherwise == 1
    line = (tmp_path / JOURNAL).read_text()
    with open(tmp_path / JOURNAL, "a") as f:  # a line whose signature a crash cut short: not signed otherwise
        f.write(line[:-11])
    assert journal.load()[1] == 1 and journal.signed_otherwise == 0


def test_shards_partition_the_units_stably():
    students = [f"student-{i}" for i in range(200)]
    units = list(product(students, ["9.1", "9.2", "9.3", "9.10"]))
    for count in (1, 2, 5, 16):
        owners = [[i for i in range(count) if Shard(i, count).holds(*unit)] for unit in units]
        assert all(len(o) == 1 for o in owners), "each unit in exactly one shard"
        sizes = [sum(o == [i] for o in owners) for i in range(count)]
        assert min(sizes) > len(units) / count * 0.7, sizes  # about even
    assert Shard.parse("2/7") == Shard(2, 7) and str(Shard(2, 7)) == "2/7"


def test_every_machine_puts_a_unit_in_the_same_shard():
    """Shards run in different processes on different machines: the hash must not be Python's per-process
    salted one."""
    code = ("from kata.grade import Shard; print([i for s in range(60) for i in range(7) "
            "if Shard(i, 7).holds(f'student-{s}', '9.3')])")
    outputs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    here = str([i for s in range(60) for i in range(7) if Shard(i, 7).holds(f"student-{s}", "9.3")]) + "\n"
    assert outputs == {here}


def test_kata_grade_reads_as_one_command_with_merge_beside_it():
    bare = subprocess.run([kata_exe(), "grade"], capture_output=True, text=True, timeout=60)
    assert bare.returncode == 2
    assert "Usage: kata grade [OPTIONS] SUBMISSIONS" in bare.stderr and "Try 'kata grade --help'" in bare.stderr
    merge = subprocess.run([kata_exe(), "grade", "merge", "--help"], capture_output=True, text=True, timeout=60)
    assert merge.returncode == 0 and "Usage: kata grade merge [OPTIONS] OUT SHARD_DIRS..." in merge.stdout


def test_a_class_folder_named_like_a_subcommand_is_graded(tmp_path):
    """Many call the class folder `class`, the grading command's own hidden name; one could call it `merge`."""
    env = {**os.environ, "KATA_COURSE": str(REPO)}
    for name in ("class", "merge"):
        (tmp_path / name).mkdir()
        done = subprocess.run([kata_exe(), "grade", name], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                              env=env)
        assert done.returncode == 2 and f"no student folders or .zip files in {tmp_path / name}" in done.stderr, \
            done.stderr
    absent = subprocess.run([kata_exe(), "grade", "class"], capture_output=True, text=True, timeout=60,
                            cwd=tmp_path / "class", env=env)
    assert absent.returncode == 2 and "'class' does not exist" in absent.stderr, absent.stderr


def test_the_merge_carries_the_isolation_the_shards_recorded(tmp_path):
    students = [f"student-{i}" for i in range(6)]
    safe, unsafe = "bubblewrap 0.8.0: ...; a memory cgroup per unit", "none (--unsafe-no-sandbox); ..."

    def shards(run: str, isolations: list[str]) -> list[Path]:
        folders = []
        for index, isolation in enumerate(isolations):
            shard, folder = Shard(index, len(isolations)), tmp_path / run / f"shard-{index}"
            folder.mkdir(parents=True)
            for student in students:
                if shard.holds(student, "9.1"):
                    Journal(folder / JOURNAL, KEY).append(KataGrade(student, "9.1", "passed", 10.0, 10.0,
                                                               isolation=isolation))
            (folder / "grades.json").write_text(json.dumps({
                "schema": SCHEMA, "shard": str(shard), "katas": [{"id": "9.1"}], "isolation": isolation,
                "students": [{"student": s, "source": f"/class/{s}"} for s in students]}))
            folders.append(folder)
        return folders

    course = load_course(REPO)
    same = merge_shards(course, tmp_path / "same-out", shards("same", [safe, safe]), KEY)
    assert same.complete and same.isolation == safe
    assert json.loads((tmp_path / "same-out" / "grades.json").read_text())["isolation"] == safe
    mixed = merge_shards(course, tmp_path / "mixed-out", shards("mixed", [safe, unsafe, safe]), KEY)
    assert mixed.isolation == f"shard 0/3: {safe} | shard 1/3: {unsafe} | shard 2/3: {safe}"
    shown = Console(file=io.StringIO(), width=200)
    render.grade_summary(shown, mixed, mixed.reports, tmp_path / "mixed-out")
    assert "not isolated: graded with --unsafe-no-sandbox" in shown.file.getvalue()
