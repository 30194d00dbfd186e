"""Points that match severity (`kata.scoring`): a critical check that fails caps the kata at a share of its
points; an edge contract costs its weight's share; every place a score appears says the same."""

from __future__ import annotations

import ast
import re
import time
from dataclasses import replace
from io import StringIO
from pathlib import Path

import jsonschema
import pytest
from rich.console import Console

from kata import classroom, render, runner, scoring
from kata import gradescope as gs
from kata.course import load_course
from kata.grade import ClassGrades, KataGrade, Submission, report_rows
from kata.gradescope import Visibility
from kata.nbgrader import runtime
from kata.runner import Check, KataResult
from kata.verify import KataReport, _conclude, _judge_reference, _Plan, _Task
from tests.conftest import CORRECT_SOFTMAX, REPO
from tests.test_classroom import reporter_points
from tests.test_gradescope import SCHEMA as GRADESCOPE_SCHEMA

# Four checks of one point: the values' (critical; a float32 and a float64 run on the CPU), two of shapes.
GRADERS = '''import torch
import pytest

from kata.toolkit.compare import assert_close


{critical}
def test_values(student, device, dtype):
    """Equal to torch.softmax"""
    x = torch.randn(3, 5, device=device, dtype=dtype)
    assert_close(student.softmax(x), torch.softmax(x, dim=-1))


def test_shape(student):
    """Keeps the shape"""
    assert student.softmax(torch.randn(2, 3)).shape == (2, 3)


def test_other_shape(student):
    """Keeps another shape"""
    assert student.softmax(torch.randn(4, 1)).shape == (4, 1)
'''
# Right in float32, wrong in float64 (an edge contract), or wrong everywhere (what the kata builds).
WRONG_IN_FLOAT64 = CORRECT_SOFTMAX + (
    "\n\n_right = softmax\n\n\ndef softmax(x, dim=-1):\n"
    "    return _right(x, dim) * (1.01 if x.dtype == torch.float64 else 1.0)\n")
NOT_NORMALISED = "import torch\n\n\ndef softmax(x, dim=-1):\n    return torch.exp(x - x.amax(dim=dim, keepdim=True))\n"


def graded(course, softmax_file, tmp_path, code: str, critical: bool = True) -> KataResult:
    graders = tmp_path / "graders"
    graders.mkdir(exist_ok=True)
    (graders / "test_part.py").write_text(GRADERS.format(critical="@pytest.mark.critical" if critical else ""))
    return runner.run_kata(course, course.find("9.1"), softmax_file(code), graders=graders)


def test_the_rule():
    assert scoring.earned(10, 3, 4, capped=False) == 7.5
    assert scoring.earned(10, 3, 4, capped=True) == 10 * scoring.CRITICAL_CAP
    assert scoring.earned(10, 1, 4, capped=True) == 2.5, "the cap never raises a score"
    assert scoring.earned(10, 4, 4, capped=False) == 10 and scoring.earned(10, 0, 0, capped=True) == 0
    assert scoring.is_critical_run("cpu", "float32") and scoring.is_critical_run(None, None)
    assert not scoring.is_critical_run("cpu", "float64") and not scoring.is_critical_run("cuda", "float32")


@pytest.mark.slow(seconds=10)
def test_a_failed_critical_check_caps_the_kata(course, softmax_file, tmp_path):
    """Wrong values on ordinary inputs: both runs of the values fail, the shapes pass (5 of 10 points' worth),
    capped at 4 of 10. Without the marker, the same file keeps its checks' share."""
    result = graded(course, softmax_file, tmp_path, NOT_NORMALISED)
    assert [c.id for c in result.checks if c.critical] == ["test_values[cpu-float32]"]
    assert result.critical_failed == ["test_values[cpu-float32]"] and result.cap == 4.0
    assert result.points == 4.0 and result.capped_off == pytest.approx(1.0)
    assert runtime.score_of(result, 10.0) == 4.0 and runtime.score_of(result, 20.0) == 8.0
    data = result.to_dict()
    assert data["points"] == 4.0 and data["critical_failed"] == ["test_values[cpu-float32]"]
    unmarked = graded(course, softmax_file, tmp_path, NOT_NORMALISED, critical=False)
    assert unmarked.points == 5.0 and unmarked.cap is None and not unmarked.critical_failed
    assert runtime.score_of(unmarked, 10.0) == 5.0


@pytest.mark.slow(seconds=5)
def test_an_edge_run_of_a_critical_check_costs_only_its_share(course, softmax_file, tmp_path):
    """The float64 run of a critical check is an edge contract: failing it costs that run's share, no cap."""
    result = graded(course, softmax_file, tmp_path, WRONG_IN_FLOAT64)
    assert [c.id for c in result.checks if not c.passed] == ["test_values[cpu-float64]"]
    assert result.points == 7.5 and result.cap is None and runtime.score_of(result, 10.0) == 7.5


@pytest.mark.slow(seconds=5)
def test_a_critical_check_a_crash_left_unrun_caps_too(course, softmax_file, tmp_path):
    """Which checks are critical is planned in the import record, before the student's code runs: a critical
    check that never ran (the student's process ended first) did not pass."""
    code = CORRECT_SOFTMAX + ("\n\nimport os\n_right = softmax\n\n\ndef softmax(x, dim=-1):\n"
                              "    if x.shape == (4, 1):\n        os._exit(3)\n    return _right(x, dim)\n")
    graders = tmp_path / "graders"
    graders.mkdir()
    # The critical check last, after the one that ends the student's process.
    source = GRADERS.format(critical="")
    values = source[source.index("\ndef test_values"):source.index("\n\ndef test_shape")]
    source = source.replace(values, "") + "\n\n@pytest.mark.critical" + values + "\n"
    (graders / "test_part.py").write_text(source)
    result = runner.run_kata(course, course.find("9.1"), softmax_file(code), graders=graders)
    assert result.outcome == runner.CRASH and [c.id for c in result.checks] == ["test_shape", "test_other_shape"]
    assert result.critical_failed == ["test_values[cpu-float32]"], result.critical_failed
    assert result.points == 2.5 and runtime.score_of(result, 10.0) == 2.5  # 1 of 4 passed: below the cap


def capped_result() -> tuple:
    kata = load_course(REPO).find("9.1")
    checks = [Check("a[cpu-float32]", "Equal [cpu-float32]", "failed", "differs", weight=1.0, points=2.5,
                    critical=True),
              Check("a[cpu-float64]", "Equal [cpu-float64]", "passed", weight=1.0, points=2.5),
              Check("b", "Sums to one", "passed", weight=2.0, points=5.0)]
    result = KataResult("9.1", str(kata.exercise), runner.FAILED, checks=checks, points=4.0, max_points=10,
                        complete=True, total_weight=4.0, critical_failed=["a[cpu-float32]"], cap=4.0)
    return kata, result


def test_kata_check_shows_the_cap_as_a_row_and_the_rows_add_up():
    kata, result = capped_result()
    screen = StringIO()
    render.check_result(Console(file=screen, width=140), load_course(REPO), kata, result)
    out = screen.getvalue()
    assert re.search(r"✗\s+Equal\s+✗ cpu-float32 ✓ cpu-float64\s+1/2\s+2\.5/5 pt", out), out
    assert re.search(r"✓\s+Sums to one\s+1/1\s+5 pt", out), out
    assert re.search(r"!\s+capped at 40% of the points: a critical check failed \(Equal \[cpu-float32\]\).*−3\.5 pt",
                     out, re.DOTALL), out
    assert "2/3 runs passed · 4 of 10 points" in out
    assert runtime.score_of(result, 10.0) == 4.0
    report = runtime.report(result, kata, runtime.StudentCode("", [], 0), Path("x.py"), 10.0, 4.0)
    assert "4 of 10 points" in report and "capped at 40%" in report and "(−3.5)" in report


def test_every_report_of_a_capped_grade_adds_up_to_it():
    kata, result = capped_result()
    checks = [{"id": c.id, "title": c.title, "status": c.status, "points": c.points if c.passed else 0.0,
               "worth": c.points, "weight": c.weight, "critical": c.critical, "message": c.message, "diagnoses": []}
              for c in result.checks]
    grade = KataGrade("ann", "9.1", runner.FAILED, 4.0, 10.0, "1 of 3 checks did not pass", checks=checks,
                      critical_failed=result.critical_titles(), capped_off=result.capped_off)
    # kata grade: checks.csv's rows (the cap's among them) add up to katas.csv's points, which say why
    rows = report_rows(ClassGrades([kata], [Submission("ann", Path("ann"), None)], {grade.key: grade}))
    checks_csv = [dict(zip(rows["checks.csv"][0], r, strict=True)) for r in rows["checks.csv"][1:]]
    assert sum(r["points"] for r in checks_csv) == pytest.approx(4.0)
    assert checks_csv[-1]["check"] == "cap" and checks_csv[-1]["points"] == -3.5
    katas_csv = dict(zip(rows["katas.csv"][0], rows["katas.csv"][1], strict=True))
    assert katas_csv["points"] == 4 and katas_csv["capped"].startswith("capped at 40%")
    # Gradescope: the tests' scores add up to the kata's, in a results.json of Gradescope's format
    results = gs._results([kata], [grade], Visibility(), time.perf_counter(), 768)
    jsonschema.validate(results, GRADESCOPE_SCHEMA)
    tests = results["tests"]
    assert sum(t["score"] for t in tests) == pytest.approx(results["score"]) == 4.0
    assert tests[-1]["name"].endswith(": cap") and sum(t["max_score"] for t in tests) == 10
    # GitHub Classroom: the reporter's table and its notice both say 4
    data = classroom.result(kata, grade)
    assert reporter_points([data]) == pytest.approx((4.0, 4.0))
    assert [t["name"] for t in data["tests"] if t["name"].startswith("9.1 cap")]


def test_every_kata_marks_few_critical_checks_and_no_structural_one():
    for graders in sorted((REPO / "graders").iterdir()):
        marked = []
        for path in sorted(graders.glob("test_*.py")):  # a kata's checks may span files (test_contract_defaults.py)
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.FunctionDef):
                    names = {ast.unparse(d) for d in node.decorator_list}
                    if "pytest.mark.critical" in names:
                        assert "pytest.mark.structural" not in names, (path.name, node.name)
                        marked.append(node.name)
        assert 1 <= len(marked) <= 4, (graders.name, marked)


def test_verify_refuses_a_kata_without_a_critical_check():
    kata = load_course(REPO).find("9.1")
    passing = [Check("a", "A", "passed", points=10.0)]

    def run(checks):
        result = KataResult("9.1", "x.py", runner.PASSED, checks=checks, points=10.0, max_points=10.0)
        plan = _Plan(kata, KataReport("9.1", kata.title), [_Task(Path("x.py"), lambda r: _judge_reference(r, 0))])
        return _conclude(plan, [result]).problems

    assert any("no check is marked critical" in p for p in run(passing))
    assert not run([replace(passing[0], critical=True)])
