"""The Canvas gradebook of `kata grade --format canvas`: columns, points, blanks, and the roster's mapping of
folder names to Canvas ids (the graded round trip is in tests/test_shard.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from kata.course import load_course
from kata.grade import ClassGrades, GradeError, KataGrade, Submission
from kata.lms import CanvasStudent, Roster, canvas_rows, match_roster, read_roster, write_canvas
from tests.conftest import REPO


@pytest.fixture
def state() -> ClassGrades:
    course = load_course(REPO)
    katas = [course.find("9.1"), course.find("9.2")]
    names = ["ann", "ben", "=cmd|' /C calc'!A0"]
    grades = {
        ("ann", "9.1"): KataGrade("ann", "9.1", "passed", 10.0, 10.0),
        ("ann", "9.2"): KataGrade("ann", "9.2", "failed", 10 * 7 / 23, 10.0),
        ("ben", "9.1"): KataGrade("ben", "9.1", "missing", 0.0, 10.0),  # 9.2 not graded yet (interrupted)
        ("=cmd|' /C calc'!A0", "9.1"): KataGrade("=cmd|' /C calc'!A0", "9.1", "passed", 10.0, 10.0),
        ("=cmd|' /C calc'!A0", "9.2"): KataGrade("=cmd|' /C calc'!A0", "9.2", "passed", 10.0, 10.0),
    }
    return ClassGrades(katas, [Submission(n, Path(n), None) for n in names], grades)


def test_one_column_for_the_assignment_blank_until_every_kata_is_graded(state):
    rows = canvas_rows(state, assignment="Transformer katas")
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Transformer katas"]
    assert rows[1] == ["Points Possible", "", "", "", "", 20]
    assert rows[2] == ["ann", "", "", "", "", 13.0435]
    assert rows[3] == ["ben", "", "", "", "", ""], "a blank cell leaves Canvas's grade alone; 0 would overwrite it"
    assert rows[4][0] == "'=cmd|' /C calc'!A0" and rows[4][5] == 20  # never a formula in a spreadsheet


def test_per_kata_columns(state):
    rows = canvas_rows(state, assignment="Unit 9", per_kata=True)
    assert rows[0][5:] == ["Unit 9: 9.1 Numerically stable softmax", "Unit 9: 9.2 Layer normalisation"]
    assert rows[1][5:] == [10, 10]
    assert [r[5:] for r in rows[2:]] == [[10, 3.0435], [0, ""], [10, 10]]


def test_the_roster_maps_folders_to_canvas_ids(state, tmp_path):
    roster = tmp_path / "export.csv"  # Canvas's gradebook export, with its extra rows and columns
    roster.write_text("\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Quiz 1 (12),Current Score\n"
                      "    Points Possible,,,,,10,(read only)\n"
                      "\"Lee, Ann\",2001,u1,ann@uni.edu,A,8,80\n"
                      "\"Bo, Ben\",2002,ben,ben@uni.edu,B,,\n"
                      "\"Student, Test\",2003,,,A,,\n", encoding="utf-8")
    rows = read_roster(roster)
    assert [r["ID"] for r in rows] == ["2001", "2002", "2003"]
    with pytest.raises(GradeError, match=r"not on the roster: ann, =cmd"):
        match_roster([s.student for s in state.submissions], rows)
    rows.append({"Student": "Evil", "ID": "2004", "Folder": "=cmd|' /C calc'!A0", "SIS Login ID": "ann"})
    # "ann" is now the Folder of no one but the SIS Login ID of one: the first column that has the name decides.
    rows[0]["SIS Login ID"] = "ann"
    with pytest.raises(GradeError, match="on the roster more than once: ann"):
        match_roster(["ann"], rows)
    rows[-1]["SIS Login ID"] = ""
    found = match_roster([s.student for s in state.submissions], rows)
    assert [(k, v.id) for k, v in found.students.items()] == [("ann", "2001"), ("ben", "2002"),
                                                              ("=cmd|' /C calc'!A0", "2004")]
    path = write_canvas(tmp_path, state, assignment="Katas (555)", roster=found)
    with open(path, newline="", encoding="utf-8") as f:
        written = list(csv.reader(f))
    assert written[2] == ["Lee, Ann", "2001", "u1", "ann", "A", "13.0435"]
    assert written[3] == ["Bo, Ben", "2002", "ben", "ben@uni.edu", "B", ""]


def test_a_roster_without_id_columns_is_refused(tmp_path):
    roster = tmp_path / "names.csv"
    roster.write_text("Name,Email\nAnn,ann@uni.edu\n")
    with pytest.raises(GradeError, match="has none of the columns Folder, SIS Login ID"):
        read_roster(roster)


def test_no_canvas_column_holds_a_formula(state):
    roster = Roster({"ann": CanvasStudent("Lee, Ann", "=1+2", "@u1", "+ann", "-A")}, [])
    rows = canvas_rows(state, assignment="=Katas", roster=roster)
    assert rows[0][5] == "'=Katas" and rows[2][:5] == ["Lee, Ann", "'=1+2", "'@u1", "'+ann", "'-A"]


def test_a_roster_student_who_handed_nothing_in_gets_0_or_a_blank(state, tmp_path):
    roster = tmp_path / "export.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section\n\"Lee, Ann\",2001,u1,ann,A\n"
                      "\"Bo, Ben\",2002,u2,ben,B\n\"Cy, Cy\",2003,u3,cy,A\n,,,,\n", encoding="utf-8")
    found = match_roster(["ann", "ben"], read_roster(roster))
    assert found.absent == [CanvasStudent("Cy, Cy", "2003", "u3", "cy", "A")], "a row naming no one is no one"
    state = ClassGrades(state.katas, state.submissions[:2], state.grades)
    assert canvas_rows(state, assignment="K", roster=found)[4] == ["Cy, Cy", "2003", "u3", "cy", "A", 0]
    assert canvas_rows(state, assignment="K", roster=found, per_kata=True)[4][5:] == [0, 0]
    assert canvas_rows(state, assignment="K", roster=found, absent_blank=True)[4][5:] == [""]
    one = match_roster(["ann"], read_roster(roster), whole_class=False)  # `kata grade --student ann`
    assert one.absent == [] and len(canvas_rows(state, assignment="K", roster=one)) == 4
