"""The nbgrader export, proven by a real round trip with the ordinary nbgrader commands.

`kata nbgrader export` writes the course; `nbgrader validate` passes on the source notebooks;
`nbgrader generate_assignment` releases notebooks holding no solution and no grader code; students
submit (the reference solutions, the untouched release, planted mistakes, code that kills its
process); `nbgrader autograde` grades them all; feedback shows no hidden test; `nbgrader export` gives
exactly the points `kata check` gives the same code.
"""

from __future__ import annotations

import ast
import csv
import html
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from kata import scoring
from kata.course import load_course
from kata.nbgrader import runtime
from kata.nbgrader.export import export_course
from kata.nbgrader.notebook import DELIMITERS, given_katas
from kata.runner import run_kata
from kata.stubs import derive_stub, strip_markers
from kata.verify import with_mistake
from tests.conftest import REPO, copy_course
from tests.forgers import attacks

# The round trip grades these katas: one on its own, one that builds on earlier katas (given code).
ROUND_TRIP = ("9.1", "9.4")
# The partly correct student's planted mistakes (each passes some checks and fails others).
MISTAKES = {"9.1": "ignores_dim.py", "9.4": "mask_from_first_batch.py"}
STUDENTS = ("reference", "untouched", "partial", "crasher")
BIN = str(Path(sys.executable).parent)


def nbgrader(root: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), KATA_COURSE=os.environ["KATA_COURSE"])
    return subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=timeout)


def cell(nb, grade_id: str):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def grader_lines(course, kata) -> set[str]:
    """Lines of the kata's graders distinctive enough that finding one in a student's view means a leak
    (a line the stub, the README or the given code of earlier katas also holds is public anyway)."""
    public = "\n".join([derive_stub(kata.solution.read_text()), kata.readme.read_text(),
                        *(k.solution.read_text() for k in given_katas(course, kata))])
    lines = set()
    for path in kata.graders.glob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if len(line) >= 30 and not line.startswith(("import ", "from ")) and line not in public:
                lines.add(line)
    return lines


def own_cells(nb, kata) -> str:
    """What a notebook shows of the kata itself: every cell but the README and the given code of earlier
    katas (those are public, and may quote anything)."""
    return "\n".join(c.source for c in nb.cells if not c.metadata["nbgrader"]["grade_id"].startswith(
        (f"{kata.slug}_readme", f"{kata.slug}_given_")))


def solution_lines(solution: str) -> set[str]:
    """The code inside the solution regions: what a student must write."""
    inside, lines = False, set()
    for line in solution.split("\n"):
        if "### BEGIN SOLUTION" in line:
            inside = True
        elif "### END SOLUTION" in line:
            inside = False
        elif inside and len(line.strip()) >= 20 and not line.strip().startswith("#"):
            lines.add(line.strip())
    return lines


# ---------------------------------------------------------------------------------------------------
# The exported course, read without running anything


def test_export_writes_a_complete_nbgrader_course(tmp_path):
    course = load_course(copy_course(tmp_path / "course"))
    report = export_course(course, tmp_path / "nb")
    root = tmp_path / "nb"
    assert sorted(report.assignments) == sorted(k.dirname for k in course.katas)
    config = (root / "nbgrader_config.py").read_text()
    ast.parse(config)
    assert f"c.CourseDirectory.course_id = {course.course_id!r}" in config
    assert "ClearHiddenTests" in config and "c.GenerateFeedback.preprocessors" in config
    for kata in course.katas:
        assert f"{kata.slug!r}: {int(kata.time_budget_s)},  # kata {kata.id}" in config
    for kata in course.katas:
        folder = root / "source" / kata.dirname
        assert [p.name for p in folder.iterdir()] == [f"{kata.dirname}.ipynb"], "only the notebook is released"
        nb = nbformat.read(folder / f"{kata.dirname}.ipynb", as_version=4)
        nbformat.validate(nb)
        assert nb.metadata.kernelspec.name == "python3"
        ids = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells]
        assert len(ids) == len(set(ids)) and all(re.fullmatch(r"[a-zA-Z0-9_\-]+", i) for i in ids)
        for c in nb.cells:
            meta = c.metadata["nbgrader"]
            assert set(meta) - {"points"} == {"schema_version", "grade", "solution", "locked", "task", "grade_id"}
            assert meta["schema_version"] == 3
        grade = cell(nb, f"{kata.slug}_grade")
        assert grade.metadata.nbgrader["points"] == kata.points and grade.metadata.nbgrader["locked"]
        assert "### BEGIN HIDDEN TESTS" in grade.source and "### END HIDDEN TESTS" in grade.source
        solution = cell(nb, f"{kata.slug}_solution")
        assert "### BEGIN SOLUTION" in solution.source
        assert not any(line.startswith("from kata.earlier") for line in solution.source.splitlines())
        for c in nb.cells:
            if c not in (grade, solution):
                assert not any(d in c.source for d in DELIMITERS), (kata.id, c.id)
        # Given code: the reference of every earlier kata it builds on, as read-only code.
        given = [c for c in nb.cells if c.metadata.nbgrader["grade_id"].startswith(f"{kata.slug}_given_")]
        assert [c.metadata.nbgrader["grade_id"] for c in given] == [
            f"{kata.slug}_given_{k.slug}" for k in given_katas(course, kata)]
        for c, earlier in zip(given, given_katas(course, kata), strict=True):
            assert c.metadata.nbgrader["locked"]
            body = strip_markers(earlier.solution.read_text())
            defs = [line for line in body.splitlines() if line.startswith(("def ", "class "))]
            assert defs and all(line in c.source.splitlines() for line in defs)


def test_given_code_follows_the_imports(tmp_path):
    course = load_course(copy_course(tmp_path / "course"))
    kata = course.find("9.4")
    assert [k.id for k in given_katas(course, kata)] == ["9.1", "9.3"]
    assert given_katas(course, course.find("9.1")) == []


def test_the_export_warns_which_assignment_gives_which_earlier_answer(tmp_path):
    course = load_course(copy_course(tmp_path / "course"))
    katas = [course.find(i) for i in ("9.1", "9.2", "9.3", "9.4")]
    report = export_course(course, tmp_path / "nb", katas)
    assert report.gives == {"9.3-attention": ["9.1"], "9.4-multi-head-attention": ["9.1", "9.3"]}
    assert report.warnings == [
        "9.3-attention gives the reference solution of kata 9.1 (9.1-softmax) as code: release it only after "
        "that kata's deadline",
        "9.4-multi-head-attention gives the reference solution of kata 9.1 (9.1-softmax), 9.3 (9.3-attention) as "
        "code: release it only after the deadlines of those katas"]
    alone = export_course(course, tmp_path / "alone", [course.find("9.3")])
    assert alone.warnings[0].startswith("9.3-attention gives the reference solution of kata 9.1 (not in this export)")
    grouped = export_course(course, tmp_path / "grouped", katas, assignment="hw")
    assert grouped.warnings == ["hw gives the reference solution of kata 9.1, 9.3, which it also grades: its "
                                "students get that answer with the kata; export with one assignment per kata "
                                "instead (no --assignment)"]
    assert export_course(course, tmp_path / "first", [course.find("9.1"), course.find("9.2")]).warnings == []


def test_the_docs_say_which_assignment_gives_which_earlier_answer():
    course = load_course(REPO)
    text = (REPO / "docs" / "instructors.md").read_text()
    table = text.split("| assignment | gives the reference solutions of |\n|---|---|\n")[1].split("\n\n")[0]
    said = {}
    for line in table.splitlines():
        names, gives = (c.strip() for c in line.strip("|").split("|"))
        said.update({name: [] if gives == "nothing" else gives.split(", ") for name in names.split(", ")})
    assert said == {k.dirname: [g.id for g in given_katas(course, k)] for k in course.katas}


def test_export_refuses_to_overwrite_changed_files(tmp_path):
    course = load_course(copy_course(tmp_path / "course"))
    export_course(course, tmp_path / "nb", [course.find("9.1")])
    config = tmp_path / "nb" / "nbgrader_config.py"
    config.write_text(config.read_text() + "\n# the instructor's own line\n")
    from kata.nbgrader.export import ExportError

    with pytest.raises(ExportError, match="--force"):
        export_course(course, tmp_path / "nb", [course.find("9.1")])
    again = export_course(course, tmp_path / "nb", [course.find("9.1")], force=True)
    assert config in again.written and "instructor's own line" not in config.read_text()


def test_cli_export_with_one_assignment(tmp_path, course_root):
    result = subprocess.run([sys.executable, "-m", "kata", "nbgrader", "export", str(tmp_path / "nb"), "--katas",
                             "9.1,attention", "--assignment", "homework", "--json"], capture_output=True, text=True,
                            cwd=course_root, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["assignments"] == {"homework": ["9.1", "9.3"]}
    assert report["gives_references"] == {"homework": ["9.1"]}  # 9.3's notebook gives 9.1's answer: say so
    assert "warning: homework gives the reference solution of kata 9.1, which it also grades" in " ".join(
        result.stderr.split())
    assert sorted(p.name for p in (tmp_path / "nb" / "source" / "homework").iterdir()) == [
        "9.1-softmax.ipynb", "9.3-attention.ipynb"]


@pytest.mark.parametrize("args", [("nbgrader", "export", "out"), ("notebook", "9.1")])
def test_notebooks_without_the_instructor_extras_say_what_to_install(course_root, monkeypatch, args):
    """A student's install has no nbformat: the commands that write notebooks say how to get it."""
    from click.testing import CliRunner

    from kata.cli import main

    monkeypatch.setitem(sys.modules, "nbformat", None)  # `import nbformat` now fails as if not installed
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 2 and '-e ".[instructor]"' in result.output, result.output
    assert not (course_root / "out").exists() and not (course_root / "9.1-softmax.ipynb").exists()


# ---------------------------------------------------------------------------------------------------
# The grade cell's runtime


def test_graded_cells_are_the_cells_between_given_code_and_sanity_checks():
    history = [f"{runtime.SETUP_MARK}\nimport torch", f"{runtime.GIVEN_MARK}: 9.1\ndef softmax(x): ...",
               "# Your code for kata 9.4\nclass A: ...", "def helper(): ...", f"{runtime.SANITY_MARK}\nA()",
               "# my scratch cell", "grade cell"]
    assert runtime.graded_cells(history) == ["# Your code for kata 9.4\nclass A: ...", "def helper(): ..."]
    code = runtime.student_file(runtime.graded_cells(history), ["from kata.earlier.softmax import softmax"])
    assert code.text.splitlines()[0] == "from kata.earlier.softmax import softmax"
    assert code.where(code.starts[1]) == "your cell 2, line 1" and code.where(1).startswith("the imports")
    # Interactive runs: the latest run of the "# Your code" cell.
    again = ["# Your code for kata 9.1\nv1", "print(1)", "# Your code for kata 9.1\nv2", "check cell"]
    assert runtime.latest_cell(again) == ["# Your code for kata 9.1\nv2"]


def test_ipython_lines_are_not_graded():
    cell = "%load_ext autoreload\nimport torch\ndef f():\n    !ls\n    return 1\n%timeit f()"
    out = runtime.python_only(cell)
    ast.parse(out)
    assert out.splitlines()[2:5] == ["def f():", "    pass  # IPython line, not graded: !ls", "    return 1"]


def _grade_history(kata, code: str) -> list[str]:
    return [f"{runtime.SETUP_MARK}\nimport torch", f"# Your code for kata {kata.id}\n{code}",
            f"{runtime.SANITY_MARK}\n", "the grade cell"]


@pytest.mark.slow
def test_grade_costs_the_student_points_never_the_kernel(course, capsys):
    """An infinite loop and an exception in the student's code: each scores 0 with a message on stdout,
    and nothing reaches stderr (nbgrader scores any stderr output as 0 points). (os._exit: the round trip.)"""
    kata = course.find("9.1")
    graders = {p.name: p.read_text() for p in kata.graders.glob("test_*.py")}
    cases = {  # name: (code, what the report says, time limit)
        "timeout": ("import torch\n\ndef softmax(x, dim=-1):\n    while True:\n        pass\n", "timeout", 12),
        "exception": ("import torch\nraise ValueError('boom')\n", "ValueError: boom", None),
    }
    for name, (code, expected, limit) in cases.items():
        score = runtime.grade(kata.id, graders, points=kata.points, history=_grade_history(kata, code), timeout=limit)
        out = capsys.readouterr()
        assert score == 0.0, name
        assert expected in out.out and out.err == "", (name, out.out, out.err)
        assert "def test_" not in out.out and "assert_close(" not in out.out


# ---------------------------------------------------------------------------------------------------
# `kata notebook`: a student notebook that ends with `kata check`


@pytest.mark.slow
def test_student_notebook_runs_kata_check(course_root):
    from nbclient import NotebookClient

    out = course_root / "notebooks"
    done = subprocess.run([sys.executable, "-m", "kata", "notebook", "9.1", str(out)], capture_output=True, text=True,
                          cwd=course_root, timeout=120)
    assert done.returncode == 0, done.stderr
    path = out / "9.1-softmax.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    kata = load_course(course_root).find("9.1")
    yours = next(c for c in nb.cells if c.source.startswith(runtime.YOURS_MARK))
    assert derive_stub(kata.solution.read_text()).strip() in yours.source
    yours.source = f"{runtime.YOURS_MARK} for kata 9.1\n" + strip_markers(kata.solution.read_text())
    NotebookClient(nb, kernel_name="python3", timeout=180, resources={"metadata": {"path": str(out)}}).execute()
    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    assert "passed" in text and "16" in text, text
    checked = out / "9.1-softmax.py"
    assert checked.is_file() and "def softmax" in checked.read_text()


# ---------------------------------------------------------------------------------------------------
# The round trip


NBGRADER_FORGERS = ("frames", "memory", "descriptors", "extension", "speaker-zeros")


def forgeries(root: Path) -> dict[str, str]:
    """The audit's attacks on nbgrader, as code below the stub in a student's cell (student, code), and the
    forgers who control their whole process (tests/forgers.py), aiming at the gradebook and the exports."""
    targets = [str(root / "gradebook.db"), str(root / "grades.csv")]
    return {
        **{name: code for name, code in attacks(targets).items() if name in NBGRADER_FORGERS},
        # A cell that mentions the grade cell's import, to be run in the grading kernel, and rewrites the score.
        "injector": "# from kata.nbgrader.runtime import grade as _kata_grade\nimport kata.nbgrader.runtime\n"
                    "kata.nbgrader.runtime.score_of = lambda result, points: float(points)\n",
        # The course folder: every score in the gradebook to full marks; the hidden tests and the other
        # students' submissions printed into the feedback.
        "snooper": "import glob, sqlite3\n_seen = []\n"
                   f"for _p in glob.glob({str(root)!r} + '/source/*/*.ipynb') + glob.glob({str(root)!r} + "
                   "'/submitted/*/*/*.ipynb'):\n"
                   "    _seen += [_l for _l in open(_p).read().splitlines()\n"
                   "              if 'HIDDEN' in _l or 'kata_graders' in _l]\n\n\n"
                   "def leak():\n    print(_seen[:6])\n    raise ValueError('what the graders hold is above')\n\n\n"
                   "try:\n"
                   f"    _db = sqlite3.connect({str(root / 'gradebook.db')!r})\n"
                   "    _db.execute('UPDATE grade SET auto_score = 10')\n"
                   "    _db.commit()\n"
                   "except Exception:\n    pass\n\n\ndef softmax(x, dim=-1):\n    leak()\n",
    }


def _submit(root: Path, student: str, assignment: str, notebook: str, solution_source: str | None) -> None:
    nb = nbformat.read(root / "release" / assignment / notebook, as_version=4)
    if solution_source is not None:
        slug = assignment.split("-", 1)[1]
        cell(nb, f"{slug}_solution").source = solution_source
    target = root / "submitted" / student / assignment / notebook
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory):
    started = time.perf_counter()
    timings: dict[str, float] = {}
    base = tmp_path_factory.mktemp("round-trip")
    course = load_course(copy_course(base / "course"))
    saved = os.environ.get("KATA_COURSE")
    os.environ["KATA_COURSE"] = str(course.root)
    try:
        root = base / "nbgrader"
        export_course(course, root)  # every kata: each is released and read below
        katas = [course.find(k) for k in ROUND_TRIP]

        # In the background: nbgrader validate on the source notebooks, and the points `kata check`
        # gives the planted mistakes (computed without nbgrader).
        validate = subprocess.Popen(
            [sys.executable, "-m", "nbgrader", "validate",
             *[str(root / "source" / k.dirname / f"{k.dirname}.ipynb") for k in katas]],
            cwd=root, env=dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", "")),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        mistakes = {}
        for kata in katas:
            solution = kata.solution.read_text()
            path = base / "independent" / kata.dirname / "exercise.py"
            path.parent.mkdir(parents=True)
            path.write_text(with_mistake(solution, (kata.mistakes_dir / MISTAKES[kata.id]).read_text(),
                                         MISTAKES[kata.id]))
            mistakes[kata.id] = path
        pool = ThreadPoolExecutor(max_workers=3)
        independent = {kid: pool.submit(run_kata, course, course.find(kid), path) for kid, path in mistakes.items()}

        t = time.perf_counter()
        generate = nbgrader(root, "generate_assignment", "*")
        timings["generate_assignment"] = time.perf_counter() - t
        assert generate.returncode == 0, generate.stdout[-3000:] + generate.stderr[-3000:]

        for kata in katas:
            name = f"{kata.dirname}.ipynb"
            source = nbformat.read(root / "source" / kata.dirname / name, as_version=4)
            solution_cell = cell(source, f"{kata.slug}_solution").source
            mistake = (kata.mistakes_dir / MISTAKES[kata.id]).read_text()
            _submit(root, "reference", kata.dirname, name, solution_cell)
            _submit(root, "untouched", kata.dirname, name, None)
            _submit(root, "partial", kata.dirname, name, f"{solution_cell.rstrip()}\n\n\n{mistake}")
        first = katas[0]
        release = nbformat.read(root / "release" / first.dirname / f"{first.dirname}.ipynb", as_version=4)
        crash = "import os\nos._exit(1)\n" + cell(release, f"{first.slug}_solution").source
        _submit(root, "crasher", first.dirname, f"{first.dirname}.ipynb", crash)
        for forger, attack in forgeries(root).items():  # no solution at all: each scores only by forging
            _submit(root, forger, first.dirname, f"{first.dirname}.ipynb",
                    cell(release, f"{first.slug}_solution").source.rstrip() + "\n\n\n" + attack)
        course_files = {p: p.read_bytes() for p in (root / "source").rglob("*") if p.is_file()}

        t = time.perf_counter()
        autograde = nbgrader(root, "autograde", "*", "--create")
        timings["autograde"] = time.perf_counter() - t
        t = time.perf_counter()  # both only read what autograde wrote: side by side
        feedback = pool.submit(nbgrader, root, "generate_feedback", "*")
        exported = nbgrader(root, "export", "--to", str(root / "grades.csv"))
        feedback = feedback.result()
        timings["generate_feedback + export"] = time.perf_counter() - t
        validated = validate.communicate(timeout=600)[0]
        expected = {kid: future.result() for kid, future in independent.items()}
        pool.shutdown()
        timings["total"] = time.perf_counter() - started
        print("round trip timings (s):", {k: round(v, 1) for k, v in timings.items()})
        yield {"course": course, "root": root, "katas": katas, "autograde": autograde, "feedback": feedback,
               "export": exported, "validate": (validate.returncode, validated), "independent": expected,
               "generate": generate, "course_files": course_files}
    finally:
        if saved is None:
            os.environ.pop("KATA_COURSE", None)
        else:
            os.environ["KATA_COURSE"] = saved


@pytest.mark.slow(seconds=250)  # the round trip, its fixture
def test_validate_passes_on_the_source_notebooks(round_trip):
    code, output = round_trip["validate"]
    assert code == 0 and output.count("Success! Your notebook passes all the tests.") == len(ROUND_TRIP), output


@pytest.mark.slow
def test_release_holds_no_solution_and_no_grader(round_trip):
    course, root = round_trip["course"], round_trip["root"]
    for kata in course.katas:
        folder = root / "release" / kata.dirname
        assert [p.name for p in folder.iterdir()] == [f"{kata.dirname}.ipynb"]
        text = (folder / f"{kata.dirname}.ipynb").read_text()
        nb = nbformat.reads(text, as_version=4)
        for delimiter in DELIMITERS:
            assert delimiter not in text, (kata.id, delimiter)
        assert "_kata_graders" not in text and "kata.nbgrader.runtime" not in text
        shown = own_cells(nb, kata)
        leaked = [line for line in grader_lines(course, kata) if line in text]
        assert not leaked, (kata.id, leaked[:3])
        # The code of the solution regions is not there.
        secret = solution_lines(kata.solution.read_text()) - {
            line.strip() for line in derive_stub(kata.solution.read_text()).splitlines()}
        assert secret and not [line for line in secret if line in shown], kata.id
        # nbgrader's release is the stub kata derives from the same cell.
        source = nbformat.read(root / "source" / kata.dirname / f"{kata.dirname}.ipynb", as_version=4)
        released = cell(nb, f"{kata.slug}_solution").source
        assert released == derive_stub(cell(source, f"{kata.slug}_solution").source)
        assert cell(nb, f"{kata.slug}_grade").source.startswith("# Autograder (read-only)")


def _grades(root: Path) -> dict[tuple[str, str], float]:
    with open(root / "grades.csv", newline="") as f:
        return {(row["student_id"], row["assignment"]): float(row["score"]) for row in csv.DictReader(f)}


@pytest.mark.slow
def test_autograde_gives_the_points_kata_check_gives(round_trip):
    autograde, exported = round_trip["autograde"], round_trip["export"]
    assert autograde.returncode == 0, autograde.stdout[-3000:] + autograde.stderr[-5000:]
    assert exported.returncode == 0, exported.stderr[-3000:]
    grades = _grades(round_trip["root"])
    for kata in round_trip["katas"]:
        assert grades[("reference", kata.dirname)] == kata.points
        assert grades[("untouched", kata.dirname)] == 0.0
        result = round_trip["independent"][kata.id]
        expected = result.points  # kata.runner's points: the passed checks', capped where a critical one failed
        failed = [c for c in result.checks if not c.passed]
        assert failed and 0 < expected < kata.points, (kata.id, result.outcome, result.message)
        score = grades[("partial", kata.dirname)]
        assert score == pytest.approx(expected, rel=0, abs=1e-9), (kata.id, score, expected)
        # Exactly: the kata's points times the passed checks' weight over the total weight, at most 40% of the points
        # where a critical check failed (kata.scoring).
        total = sum(c.weight for c in result.checks)
        uncapped = kata.points * sum(c.weight for c in result.checks if c.passed) / total
        capped = bool(result.critical_failed)
        assert score == (min(uncapped, kata.points * scoring.CRITICAL_CAP) if capped else uncapped)
        if not capped:  # losing exactly the failed checks' points: kata points * weight / total weight each
            assert kata.points - score == pytest.approx(sum(kata.points * c.weight / total for c in failed), abs=1e-9)
    first = round_trip["katas"][0]
    assert grades[("crasher", first.dirname)] == 0.0
    for forger in forgeries(round_trip["root"]):
        assert grades[(forger, first.dirname)] == 0.0, forger


@pytest.mark.slow
def test_forgers_reach_neither_the_kernel_nor_the_course_folder(round_trip):
    root, first = round_trip["root"], round_trip["katas"][0]
    assert {p: p.read_bytes() for p in (root / "source").rglob("*") if p.is_file()} == round_trip["course_files"]
    for forger in forgeries(root):
        page = html.unescape((root / "feedback" / forger / first.dirname / f"{first.dirname}.html").read_text())
        assert "BEGIN HIDDEN TESTS" not in page and "_kata_graders" not in page, forger
        assert not [line for line in grader_lines(round_trip["course"], first) if line in page], forger
        assert f"Kata {first.id} (" in page and "0 of" in page, forger


@pytest.mark.slow
def test_grade_cells_never_write_stderr_and_report_checks(round_trip):
    root = round_trip["root"]
    for student in STUDENTS:
        for kata in round_trip["katas"]:
            path = root / "autograded" / student / kata.dirname / f"{kata.dirname}.ipynb"
            if student == "crasher" and kata != round_trip["katas"][0]:
                continue
            assert path.is_file(), f"{student} {kata.id} was not autograded"
            nb = nbformat.read(path, as_version=4)
            grade = cell(nb, f"{kata.slug}_grade")
            kinds = [(o.output_type, o.get("name")) for o in grade.outputs]
            assert ("stream", "stderr") not in kinds and ("error", None) not in kinds, (student, kata.id, kinds)
            text = "".join(o.get("text", "") for o in grade.outputs)
            assert f"Kata {kata.id} (" in text
            if student == "crasher":
                assert "crash" in text and "os._exit()" in text


@pytest.mark.slow
def test_feedback_shows_results_not_hidden_tests(round_trip):
    feedback, root = round_trip["feedback"], round_trip["root"]
    assert feedback.returncode == 0, feedback.stderr[-3000:]
    for kata in round_trip["katas"]:
        page = (root / "feedback" / "partial" / kata.dirname / f"{kata.dirname}.html").read_text()
        assert "BEGIN HIDDEN TESTS" not in page and "_kata_graders" not in page
        text = html.unescape(page)
        leaked = [line for line in grader_lines(round_trip["course"], kata) if line in text]
        assert not leaked, (kata.id, leaked[:3])
        assert "checks passed" in text and "✗" in text


def test_full_marks_are_exact_whatever_the_number_of_checks():
    """Shares of 10 points over 18 checks do not add up to 10.0 in floating point; the score must."""
    from types import SimpleNamespace

    checks = [SimpleNamespace(weight=1.0, passed=True) for _ in range(16)] + [SimpleNamespace(weight=2.0, passed=True)]
    result = SimpleNamespace(checks=checks, outcome="passed", total_weight=18.0, critical_failed=[])
    assert sum(10 * c.weight / 18 for c in checks) != 10.0
    assert runtime.score_of(result, 10.0) == 10.0
    checks[-1].passed = False
    assert runtime.score_of(result, 10.0) == 10.0 * 16 / 18
    # A check a crash left unrun still counts in the total, so passing those that ran is not full marks.
    crashed = SimpleNamespace(checks=checks[:4], outcome="crash", total_weight=18.0, critical_failed=[])
    assert runtime.score_of(crashed, 10.0) == 10.0 * 4 / 18
    assert runtime.score_of(SimpleNamespace(checks=[], outcome="internal-error", total_weight=0.0,
                                            critical_failed=[]), 10.0) == 0.0
    # A critical check that did not pass caps the score (`kata.scoring`), as `kata check` caps it.
    capped = SimpleNamespace(checks=checks, outcome="failed", total_weight=18.0, critical_failed=["values"])
    assert runtime.score_of(capped, 10.0) == 4.0


def test_a_name_defined_by_two_katas_of_one_notebook_is_refused(tmp_path):
    from kata.nbgrader.notebook import NotebookError, build_notebook

    root = copy_course(tmp_path / "course")
    solution = root / "solutions" / "9.4-multi-head-attention" / "solution.py"
    solution.write_text(solution.read_text() + "\n\ndef softmax(x, dim=-1):\n    return x\n")
    course = load_course(root)
    with pytest.raises(NotebookError, match=re.escape("'softmax' is also defined by kata 9.1")):
        build_notebook(course, course.find("9.4"), nbgrader=True)


def test_grader_sources_survive_the_grade_cell():
    """Graders travel as literals: readable raw strings, or base64 when a raw string cannot hold them (or
    they hold a line nbgrader would act on)."""
    from kata.nbgrader.notebook import _literal

    for text in ("x = r'\\d+'\nprint(\"ok\")\n", "a = '''quoted'''\n", "ends with a backslash \\",
                 "# ### BEGIN SOLUTION in a comment\n", "crlf\r\n", "unicode: × √ …\n"):
        literal = _literal(text)
        assert eval(literal) == text
        assert not any(d in literal for d in DELIMITERS)
    assert _literal("plain\n").startswith("r'''")


def test_the_kernel_runs_only_the_grade_cells_the_export_wrote(course, monkeypatch):
    from kata.nbgrader import export, kernel

    kata = course.find("9.1")
    files = export.render(course, [kata])
    notebook = nbformat.reads(files[export.notebook_path(kata.dirname, kata)], as_version=4)
    source = cell(notebook, f"{kata.slug}_grade").source
    assert kernel.checksum(source) in files[Path(export.CONFIG_FILE)]  # the config lists it
    monkeypatch.setenv(kernel.GRADE_CELLS_VARIABLE, json.dumps({f"{kata.slug}_grade": kernel.checksum(source)}))
    only = kernel.OnlyGradeCells(kernel.grade_cells())

    def lines(text: str) -> list[str]:  # as IPython hands a cell to its input transformers
        return (text if text.endswith("\n") else text + "\n").splitlines(keepends=True)

    assert only(lines(source)) == lines(source)
    student = [f"# {runtime.GRADE_IMPORT}\nimport kata.nbgrader.runtime\n"
               "kata.nbgrader.runtime.score_of = lambda result, points: float(points)\n",
               source.replace("points=", "points=2*"), source + "\nimport os\n", "x = 1\n"]
    for text in student:
        assert only(lines(text)) == [], text[:80]
    monkeypatch.delenv(kernel.GRADE_CELLS_VARIABLE)
    assert kernel.OnlyGradeCells(kernel.grade_cells())(lines(source)) == []  # no list: nothing runs
