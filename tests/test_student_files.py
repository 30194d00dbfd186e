"""bench/student_files.py's machinery, for real: two files of the corpus graded through a warm pool, judged,
counted, and matched with review tables (current, stale) as the bench does."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from kata.runner import Check, KataResult
from tests.conftest import REPO


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("student_files", REPO / "bench" / "student_files.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


@pytest.fixture(scope="module")
def graded(bench):
    """9.1's logsumexp softmax (right) and its no-shift softmax (wrong, named by no-max-subtraction)."""
    course = bench.load_course(REPO)
    kata = course.find("9.1")
    folder = bench.STUDENTS / kata.id
    tasks = [(kata, "right", folder / "right" / "logsumexp.py"), (kata, "wrong", folder / "wrong" / "no_max_shift.py")]
    reviews = {"9.1/wrong/no_max_shift.py": {"verdict": "right", "diagnoses": ["no-max-subtraction"], "why": "it is"}}
    return {g.kind: g for g in bench.grade(course, tasks, jobs=1, reviews=reviews)}


def test_every_student_file_says_what_the_student_did(bench):
    course = bench.load_course(REPO)
    for kata in course.katas:
        files = bench.student_files(kata)
        assert {kind for kind, _ in files} == {"right", "wrong"}, kata.id
        for _, path in files:
            assert bench.first_line(path), path


@pytest.mark.slow(seconds=12)  # the pool's start and two gradings, in the module's fixture
def test_a_right_file_keeps_full_marks_and_no_diagnosis(graded):
    right = graded["right"]
    assert right.full_marks and right.points == right.max_points > 0
    assert right.diagnoses == [] and right.failing == [] and right.review == ""
    assert right.what == "Uses torch.logsumexp: softmax = exp(x - logsumexp(x))."


def test_a_wrong_file_is_caught_named_and_its_review_applies(graded, bench):
    wrong = graded["wrong"]
    assert not wrong.full_marks and wrong.failing
    assert wrong.ids == ["no-max-subtraction"] and wrong.diagnoses[0]["explanation"]
    assert wrong.named and not wrong.localised
    assert (wrong.review, wrong.why) == ("right", "it is")
    counts = bench.summary(list(graded.values()))
    assert counts == {"right": 1, "right_full_marks": 1, "wrong": 1, "caught": 1, "named": 1, "localised": 0,
                      "diagnosis_right": 1, "diagnosis_wrong": 0, "diagnosis_none": 0, "diagnosis_unreviewed": 0,
                      "diagnosis_absent": 0}


def test_a_review_made_on_other_diagnoses_is_stale(graded, bench):
    course = bench.load_course(REPO)
    kata = course.find("9.1")
    wrong = graded["wrong"]
    result = KataResult(kata.id, "f.py", wrong.outcome, checks=[
        Check("c", "c", "failed", diagnoses=[{"id": "fault-in-max", "explanation": "look at the max"}])])
    path = bench.STUDENTS / kata.id / "wrong" / "no_max_shift.py"
    reviews = {"9.1/wrong/no_max_shift.py": {"verdict": "right", "diagnoses": ["no-max-subtraction"]}}
    stale = bench.judge(kata, "wrong", path, result, reviews)
    assert stale.review == "unreviewed" and stale.localised and not stale.named
    assert '["9.1/wrong/no_max_shift.py"]' in bench.review_template([stale])
