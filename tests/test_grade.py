"""`kata grade`: a generated class (correct, partial, broken, hanging, zipped and unreadable submissions)
graded by the real executable, with exact expected scores; resuming, Ctrl-C, and the reports."""

from __future__ import annotations

import ast
import csv
import html
import json
import os
import re
import shutil
import signal
import subprocess
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

from kata.course import load_course
from kata.grade import ClassGrades, KataGrade, Submission, _explained, find_submissions, no_formulas, report_rows
from kata.grading import cgroup, isolation
from kata.stubs import strip_markers
from kata.verify import with_mistake
from tests.conftest import REPO, copy_course
from tests.test_cli import kata_exe
from tests.test_course import edit_toml

HANG_BUDGET = 8  # s: kata 9.1's time budget in the class's course copy, so the hanging student costs little
HANG = "def softmax(x, dim=-1):\n    while True:\n        pass\n"
CRASH = "import os\n\nos._exit(3)\n"


def reference(root: Path, kata_id: str) -> str:
    return strip_markers(load_course(root).find(kata_id).solution.read_text())


def planted(root: Path, kata_id: str, mistake: str) -> str:
    kata = load_course(root).find(kata_id)
    return with_mistake(kata.solution.read_text(), (kata.mistakes_dir / f"{mistake}.py").read_text(), mistake)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_class(root: Path, folder: Path) -> None:
    """Seven students of katas 9.1 and 9.2, in every layout `kata grade` reads."""
    stub_92 = load_course(root).find("9.2").exercise.read_text()
    write(folder / "alice" / "exercises" / "9.1-softmax" / "exercise.py", reference(root, "9.1"))  # a clone
    write(folder / "alice" / "exercises" / "9.2-layer-norm" / "exercise.py", reference(root, "9.2"))
    write(folder / "bob" / "9.1-softmax.py", planted(root, "9.1", "no_max_subtraction"))  # flat files
    write(folder / "bob" / "9.2-layer-norm" / "exercise.py", stub_92)
    write(folder / "carol" / "9.1-softmax.py", "def softmax(x, dim=-1):\n    return x.exp( / 2\n")  # no 9.2
    write(folder / "dave" / "9.1-softmax.py", HANG)
    write(folder / "dave" / "9.2-layer-norm.py", CRASH)
    with zipfile.ZipFile(folder / "erin.zip", "w") as zf:  # a download: one more folder inside
        zf.writestr("transformer-katas-main/exercises/9.1-softmax/exercise.py", reference(root, "9.1"))
        zf.writestr("transformer-katas-main/exercises/9.2-layer-norm/exercise.py",
                    planted(root, "9.2", "unbiased_variance"))
        zf.writestr("transformer-katas-main/README.md", "not code")
    write(folder / "frank.zip", "this is not a zip file")
    (folder / "=HYPERLINK(evil)").mkdir()  # a name a spreadsheet would run as a formula
    write(folder / "notes.txt", "not a student")
    write(folder / ".hidden" / "9.1-softmax.py", HANG)


def run_grade(folder: Path, *args: str, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([kata_exe(), "grade", str(folder), "--katas", "9.1,9.2", *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


@dataclass
class Graded:
    folder: Path  # the class
    out: Path  # its reports and journal
    env: dict
    report: dict  # the --json output


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Graded:
    """The class graded once, two at a time."""
    base = tmp_path_factory.mktemp("grade")
    root = copy_course(base / "course")
    edit_toml(root, "points = 10\nrequires = []\ntime_budget_s = 30",
              f"points = 10\nrequires = []\ntime_budget_s = {HANG_BUDGET}")
    folder = base / "class"
    make_class(root, folder)
    env = {**os.environ, "KATA_COURSE": str(root), "KATA_PROGRESS": str(base / "progress.json"), "COLUMNS": "250"}
    done = run_grade(folder, "--jobs", "2", "--json", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return Graded(folder, base / "class-grades", env, json.loads(done.stdout))


def by_student(report: dict) -> dict[str, dict]:
    return {s["student"]: {k["kata"]: k for k in s["katas"]} | {"total": s["total"]} for s in report["students"]}


def test_every_student_gets_exactly_the_points_of_their_code(graded):
    report = graded.report
    assert report["schema"] == "kata.grade/1" and report["complete"] and not report["interrupted"]
    students = by_student(report)
    assert sorted(students) == ["=HYPERLINK(evil)", "alice", "bob", "carol", "dave", "erin", "frank"]
    expected = {  # student: (9.1 outcome, points), (9.2 outcome, points)
        "alice": (("passed", 10), ("passed", 10)),
        "bob": (("failed", 7.5), ("not-implemented", 0)),  # 12 of 16 equal checks; the stub
        "carol": (("syntax-error", 0), ("missing", 0)),
        "dave": (("timeout", 0), ("crash", 0)),
        "erin": (("passed", 10), ("failed", 10 * 9 / 24)),  # 9 of 24 weight units of 9.2 (its parameters are right)
        "frank": (("unreadable", 0), ("unreadable", 0)),
        "=HYPERLINK(evil)": (("missing", 0), ("missing", 0)),
    }
    for student, wanted in expected.items():
        got = tuple((students[student][k]["outcome"], students[student][k]["points"]) for k in ("9.1", "9.2"))
        assert got == wanted, student
        assert students[student]["total"] == round(wanted[0][1] + wanted[1][1], 4)
    assert report["max_total"] == 20


def test_a_broken_submission_gets_its_reasons(graded):
    students = by_student(graded.report)
    assert students["carol"]["9.1"]["where"] == ["9.1-softmax.py:2"]
    assert "SyntaxError" in students["carol"]["9.1"]["message"]
    assert "no file for kata 9.2" in students["carol"]["9.2"]["message"]
    assert f"longer than {HANG_BUDGET} s" in students["dave"]["9.1"]["message"]
    assert "exit code 3" in students["dave"]["9.2"]["message"]
    assert "frank.zip could not be unpacked" in students["frank"]["9.1"]["message"]
    erin = students["erin"]["9.2"]
    assert erin["file"] == "transformer-katas-main/exercises/9.2-layer-norm/exercise.py"
    failing = [c for c in erin["checks"] if c["status"] != "passed"]
    assert failing and all(c["points"] == 0 for c in failing) and all(c["worth"] > 0 for c in failing)
    assert sum(c["points"] for c in erin["checks"]) == pytest.approx(erin["points"])


def test_the_reports_hold_every_student_kata_and_check(graded):
    out, report = graded.out, graded.report
    with open(out / "grades.csv", newline="") as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    assert rows["alice"]["total"] == "20" and rows["bob"]["9.1"] == "7.5" and rows["erin"]["9.2"] == "3.75"
    assert rows["'=HYPERLINK(evil)"]["total"] == "0"  # never a formula in a spreadsheet
    assert all(row["complete"] == "yes" and row["max"] == "20" for row in rows.values())
    with open(out / "katas.csv", newline="") as f:
        katas = list(csv.DictReader(f))
    assert len(katas) == 14
    dave = next(r for r in katas if r["student"] == "dave" and r["kata"] == "9.1")
    assert dave["outcome"] == "timeout" and dave["file"] == "9.1-softmax.py" and len(dave["sha256"]) == 64
    with open(out / "checks.csv", newline="") as f:
        checks = list(csv.DictReader(f))
    alice_91 = [c for c in checks if c["student"] == "alice" and c["kata"] == "9.1"]
    assert len(alice_91) == 16 and all(c["status"] == "passed" for c in alice_91)
    assert sum(float(c["points"]) for c in alice_91) == pytest.approx(10)
    assert json.loads((out / "grades.json").read_text())["students"] == report["students"]
    assert len((out / "results.jsonl").read_text().splitlines()) == 14


def expected_diagnosis(root: Path, kata_id: str, mistake: str) -> tuple[str, str]:
    """The diagnosis a planted mistake declares it must get (its `# expect:` line), and its explanation as
    the kata's graders write it (`Mistake("id", "explanation")`): what the student must be told."""
    kata = load_course(root).find(kata_id)
    wanted = re.search(r"^#\s*expect:\s*(\S+)", (kata.mistakes_dir / f"{mistake}.py").read_text(), re.MULTILINE)[1]
    for path in kata.graders.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Mistake" and len(node.args) == 2
                    and all(isinstance(a, ast.Constant) for a in node.args) and node.args[0].value == wanted):
                return wanted, node.args[1].value
    raise AssertionError(f"no Mistake({wanted!r}, ...) in the graders of {kata_id}")


def grader_lines(root: Path) -> set[str]:
    """Lines of the graders distinctive enough that finding one in a student's feedback means a leak."""
    return {line.strip() for path in (root / "graders").glob("*/*.py") for line in path.read_text().splitlines()
            if len(line.strip()) >= 30 and not line.strip().startswith(("import ", "from "))}


def test_the_reports_carry_each_failed_checks_diagnosis(graded):
    root, out, report = graded.folder.parent / "course", graded.out, graded.report
    (no_max_id, no_max), (unbiased_id, unbiased) = (expected_diagnosis(root, "9.1", "no_max_subtraction"),
                                                    expected_diagnosis(root, "9.2", "unbiased_variance"))
    bob = by_student(report)["bob"]["9.1"]["checks"]
    assert all(c["diagnoses"] == [] for c in bob if c["status"] == "passed")
    assert [c for c in bob if c["diagnoses"] == [{"id": no_max_id, "explanation": no_max}]], "the mistake is named"
    erin = by_student(report)["erin"]["9.2"]["checks"]
    assert [c for c in erin if {"id": unbiased_id, "explanation": unbiased} in c["diagnoses"]]
    assert all(not c["diagnoses"] for k in by_student(report)["alice"].values() if isinstance(k, dict)
               for c in k["checks"])
    with open(out / "checks.csv", newline="") as f:
        checks = list(csv.DictReader(f))
    named = {(c["student"], c["kata"], c["check"]): c["diagnosis"] for c in checks}
    assert all(named[("bob", "9.1", c["id"])] == (no_max if c["diagnoses"] else "") for c in bob)
    assert unbiased in {c["diagnosis"] for c in checks if c["student"] == "erin" and c["kata"] == "9.2"}
    with open(out / "katas.csv", newline="") as f:
        katas = {(r["student"], r["kata"]): r for r in csv.DictReader(f)}
    assert katas[("bob", "9.1")]["diagnoses"] == no_max and katas[("erin", "9.2")]["diagnoses"] == unbiased
    assert katas[("alice", "9.1")]["diagnoses"] == "" and katas[("dave", "9.1")]["diagnoses"] == ""
    # A diagnosis is a cell like any other: never a formula in a spreadsheet.
    assert no_formulas([[_explained([{"id": "x", "explanation": "=HYPERLINK(evil)"}])]]) == [["'=HYPERLINK(evil)"]]


def test_each_student_gets_feedback_with_the_reasons(graded):
    root, feedback = graded.folder.parent / "course", graded.out / "feedback"
    no_max = expected_diagnosis(root, "9.1", "no_max_subtraction")[1]
    unbiased = expected_diagnosis(root, "9.2", "unbiased_variance")[1]
    students = ["=HYPERLINK(evil)", "alice", "bob", "carol", "dave", "erin", "frank"]
    assert sorted(p.name for p in feedback.iterdir()) == sorted(f"{s}.{x}" for s in students for x in ("md", "html"))

    def markdown(student: str) -> str:  # as it reads once rendered: Markdown's escapes undone
        return re.sub(r"\\(.)", r"\1", (feedback / f"{student}.md").read_text())

    def page(student: str) -> str:
        return (feedback / f"{student}.html").read_text()

    bob = markdown("bob")
    assert "# Feedback for bob" in bob and "**7.5 of 20 points**" in bob
    assert "## 9.1 Numerically stable softmax: failed, 7.5 of 10 points" in bob and "12 of 16 checks passed." in bob
    assert f"> **Looks like:** {no_max}" in bob
    first_failure = next(c for c in by_student(graded.report)["bob"]["9.1"]["checks"] if c["status"] != "passed")
    assert first_failure["title"] in bob and first_failure["message"].splitlines()[0] in bob
    assert "## 9.2 Layer normalisation: not implemented yet, 0 of 10 points" in bob
    stub = bob.split("## 9.2")[1]  # the stub's checks: one line, not a failure each
    assert "Not implemented yet: " in stub and "### ✗" not in stub
    assert f"> **Looks like:** {unbiased}" in markdown("erin")
    dave = markdown("dave")
    assert "## 9.1 Numerically stable softmax: timeout, 0 of 10 points" in dave
    assert f"longer than {HANG_BUDGET} s" in dave and "## 9.2 Layer normalisation: crash" in dave
    assert "Where: 9.1-softmax.py:2" in markdown("carol") and "no file for kata 9.2" in markdown("carol")
    assert "# Feedback for =HYPERLINK(evil)" in markdown("=HYPERLINK(evil)")

    html_bob = page("bob")
    assert f"<strong>Looks like:</strong> {no_max}</div>" in html.unescape(html_bob)
    assert "Numerically stable softmax: <span class=\"failed\">failed</span>, 7.5 of 10 points" in html_bob
    for student in students:  # self-contained: nothing fetched, nothing run
        text = page(student)
        assert text.startswith("<!DOCTYPE html>") and "<style>" in text
        assert not re.search(r"<script|<link|<img|<iframe|src=|href=|url\(|@import|https?:", text, re.IGNORECASE)
    # Feedback, never the graders' source.
    leaked = grader_lines(root)
    shown = "\n".join(markdown(s) + html.unescape(page(s)) for s in students)
    assert leaked and not [line for line in leaked if line in shown]


def test_the_summary_names_the_problems(graded):
    done = run_grade(graded.folder, env=graded.env)  # everything is in the journal: nothing is graded again
    assert done.returncode == 0, done.stderr[-3000:]
    text = done.stdout
    assert "14 results reused from the journal" in text and "0 graded" in text
    assert "carol 9.1 syntax error (9.1-softmax.py:2)" in text
    assert "dave 9.1 timeout" in text and "dave 9.2 crash" in text
    assert "no file for =HYPERLINK(evil) 9.1, =HYPERLINK(evil) 9.2, carol 9.2 (looked for" in text
    assert "frank 9.1 submission unreadable: frank.zip could not be unpacked" in text


def test_cold_units_grade_the_class_exactly_as_the_warm_pool_did(graded, tmp_path):
    """`graded` went through the sandboxed warm pool (`kata.pool`); `KATA_POOL=0` starts every unit cold,
    each in a bubblewrap sandbox of its own. Every check of every unit comes out the same."""
    if not (isolation.probe().available and cgroup.probe().available):
        pytest.skip("the warm pool of `kata grade` needs bubblewrap and a memory cgroup per unit (CI has both)")
    cold_out = tmp_path / "cold-grades"
    done = run_grade(graded.folder, "--jobs", "2", "--json", "--out", str(cold_out),
                     env={**graded.env, "KATA_POOL": "0"})
    assert done.returncode == 0, done.stderr[-3000:]

    def unit_by_unit(report: dict) -> dict:
        return {(s["student"], k["kata"]): (k["outcome"], k["points"], k["message"], k["where"],
                                            [(c["id"], c["status"], c["points"], c["message"]) for c in k["checks"]])
                for s in report["students"] for k in s["katas"]}

    warm, cold = unit_by_unit(graded.report), unit_by_unit(json.loads(done.stdout))
    assert cold == warm
    assert sum(len(unit[4]) for unit in warm.values()) > 60  # the checks of every graded unit, compared


def test_a_rerun_grades_only_what_changed(graded, tmp_path):
    env = graded.env
    # The class and its results moved elsewhere: the journal holds paths relative to each student.
    moved, moved_out = tmp_path / "class", tmp_path / "class-grades"
    shutil.copytree(graded.folder, moved)
    shutil.copytree(graded.out, moved_out)
    with open(moved / "bob" / "9.1-softmax.py", "a") as f:
        f.write("\n# resubmitted\n")
    with open(moved_out / "results.jsonl", "a") as f:
        f.write('{"student": "alice", "kata": "9.')  # the line a crash cut short
    done = run_grade(moved, "--json", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert (report["graded"], report["reused"]) == (1, 13)
    assert by_student(report)["bob"]["9.1"]["points"] == 7.5, by_student(report)["bob"]["9.1"]
    lines = (moved_out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 16 and json.loads(lines[-1].rpartition("\t")[0])["student"] == "bob"  # the cut line stays

    done = run_grade(moved, "--json", "--restart", "--student", "alice", env=env)
    report = json.loads(done.stdout)
    assert (report["graded"], report["reused"], [s["student"] for s in report["students"]]) == (2, 0, ["alice"])
    assert [p.name for p in moved_out.glob("results-*.jsonl")], "the old journal is kept, renamed"


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_run_keeps_what_was_finished_and_the_next_run_goes_on(tmp_path, stop):
    root = copy_course(tmp_path / "course")
    folder = tmp_path / "class"
    write(folder / "alice" / "9.1-softmax.py", reference(root, "9.1"))
    write(folder / "dave" / "9.1-softmax.py", HANG)  # 30 s budget: Ctrl-C comes long before
    (tmp_path / "tmp").mkdir()  # the private copies of the units, and so their sandboxes' command lines, are here
    env = {**os.environ, "KATA_COURSE": str(root), "KATA_PROGRESS": str(tmp_path / "p.json"),
           "TMPDIR": str(tmp_path / "tmp")}
    journal = tmp_path / "class-grades" / "results.jsonl"
    # As from a terminal: SIGINT not ignored (a shell's background jobs inherit it ignored).
    process = subprocess.Popen([kata_exe(), "grade", str(folder), "--katas", "9.1", "--jobs", "1"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not (journal.exists() and journal.read_text().count("\n") == 1) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.5)  # dave's grading child is running now
    process.send_signal(stop)
    output, _ = process.communicate(timeout=25)  # well inside dave's budget: his child was ended
    assert process.returncode == 130, output
    assert "interrupted" in output and "1 of 2 graded and kept" in output
    assert subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True).stdout == b""
    report = json.loads((tmp_path / "class-grades" / "grades.json").read_text())
    assert report["interrupted"] and not report["complete"]

    write(folder / "dave" / "9.1-softmax.py", reference(root, "9.1"))  # dave fixes his loop
    done = subprocess.run([kata_exe(), "grade", str(folder), "--katas", "9.1", "--json"], env=env,
                          capture_output=True, text=True, timeout=120)
    report = json.loads(done.stdout)
    assert (report["graded"], report["reused"], report["complete"]) == (1, 1, True)
    assert [s["total"] for s in report["students"]] == [10, 10]


def test_usage_errors_exit_2(graded, tmp_path):
    folder, out, env = graded.folder, graded.out, graded.env
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = [
        (run_grade(empty, env=env), "no student folders or .zip files"),
        (run_grade(folder, "--student", "zoe", env=env), "no submission named zoe"),
        (subprocess.run([kata_exe(), "grade", str(folder), "--katas", "9.99"], capture_output=True, text=True,
                        env=env), "9.99"),
    ]
    with FileLock(out / ".kata-grade.lock"):
        cases.append((run_grade(folder, env=env), "another `kata grade` is writing"))
    for done, message in cases:
        assert done.returncode == 2 and message in done.stderr, (done.returncode, done.stderr)


def test_the_shallowest_file_counts_and_zips_stay_inside(tmp_path):
    course = load_course(copy_course(tmp_path / "course"))
    student = tmp_path / "class" / "ann"
    write(student / "deep" / "exercises" / "9.1-softmax" / "exercise.py", "deep")
    write(student / "9.1-softmax" / "exercise.py", "shallow")
    write(student / ".git" / "9.2-layer-norm.py", "in .git")
    write(student / "solutions" / "9.3-attention" / "solution.py", "not the student's")
    found = Submission("ann", student, student).locate(course)
    assert found == {"9.1": student / "9.1-softmax" / "exercise.py"}

    with zipfile.ZipFile(tmp_path / "class" / "bea.zip", "w") as zf:
        zf.writestr("../../escaped.py", "x = 1")
        zf.writestr("/abs.py", "x = 1")
        zf.writestr("9.1-softmax.py", "x = 1")
    out = tmp_path / "class" / "out"  # inside the class folder: not a student
    subs = find_submissions(tmp_path / "class", out / "unpacked")
    assert [s.student for s in subs] == ["ann", "bea"]
    bea = subs[1]
    assert sorted(p.name for p in bea.folder.rglob("*.py")) == ["9.1-softmax.py"]
    assert not (tmp_path / "escaped.py").exists() and not list(tmp_path.glob("*/escaped.py"))


def test_no_column_of_the_reports_holds_a_formula():
    """Every text cell can carry what a student chose: a file in a folder named `=HYPERLINK(...)`, say."""
    course = load_course(REPO)
    evil = "=HYPERLINK(\"http://x\")/9.1-softmax.py"
    grade = KataGrade("ann", "9.1", "@outcome", 0.0, 10.0, "-message", file=evil, sha256="+sha",
                      isolation="-isolation", checks=[{"id": "=id", "title": "t", "status": "+s", "points": 0,
                                                      "worth": 1, "message": "\tm"}])
    state = ClassGrades([course.find("9.1")], [Submission("ann", Path("ann"), None)], {grade.key: grade})
    rows = report_rows(state)
    katas = dict(zip(rows["katas.csv"][0], rows["katas.csv"][1], strict=True))
    assert katas["file"] == "'" + evil and katas["outcome"] == "'@outcome" and katas["sha256"] == "'+sha"
    assert katas["message"] == "'-message" and katas["isolation"] == "'-isolation"
    checks = dict(zip(rows["checks.csv"][0], rows["checks.csv"][1], strict=True))
    assert (checks["check"], checks["status"]) == ("'=id", "'+s")
    cells = [c for table in rows.values() for row in table for c in row if isinstance(c, str)]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert rows["grades.csv"][1][1:3] == [0, 0], "numbers stay numbers"
