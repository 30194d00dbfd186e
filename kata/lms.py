"""Grades for a learning-management system: the gradebook CSV that Canvas imports (`kata grade --format canvas`).

Canvas's gradebook import (Grades > Import; its parser is `GradebookImporter` in canvas-lms) reads:

    Student, ID, SIS User ID, SIS Login ID, Section, <assignment>, <assignment>, ...
    Points Possible, , , , , <points>, <points>, ...        (optional: the points of new assignments)
    <one row per student>

A row's student is the Canvas user whose numeric `ID` it names, else the one whose `SIS User ID`, else
whose `SIS Login ID` it names, else whose name (or "Last, First" sortable name) is `Student`. An assignment
column named "Title (1234)" updates Canvas assignment 1234; a title alone updates the assignment of that
title, or creates it. A blank cell leaves Canvas's grade as it is, so a kata not graded yet is blank, never
0. Columns named like Canvas's computed ones (Current Score, Final Grade, ...) are dropped by Canvas, and a
"Total" column would become an assignment, so there is none.

Students map to Canvas ids through an optional roster: a CSV with Student, ID, SIS User ID, SIS Login ID
and Section columns (Canvas's own gradebook export is one) and, optionally, a `Folder` column. A
submission belongs to the row whose Folder, else SIS Login ID, else SIS User ID, else ID equals its
name in the class folder. Without a roster, rows carry the folder name as `Student` only, and Canvas
matches them by name. A roster student with no folder handed nothing in: their row gives 0 (a row left
out would keep whatever Canvas had), or blank if the instructor asks."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from kata.grade import ClassGrades, GradeError, _cell, _number, _replace, no_formulas

CANVAS_FILE = "canvas.csv"
IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MATCHED_BY = ("Folder", "SIS Login ID", "SIS User ID", "ID")  # the roster columns a folder name is looked up in


@dataclass(frozen=True)
class CanvasStudent:
    student: str
    id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""

    def cells(self) -> list[str]:
        return [_cell(self.student), self.id, _cell(self.sis_user_id), _cell(self.sis_login_id), _cell(self.section)]


def read_roster(path: Path) -> list[dict[str, str]]:
    """The rows of a roster CSV (a Canvas gradebook export will do); a GradeError if it lacks the columns."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise GradeError(f"the roster {path} could not be read: {exc}") from None
    header = set(rows[0]) if rows else set()
    if not header & set(MATCHED_BY):
        raise GradeError(f"the roster {path} has none of the columns {', '.join(MATCHED_BY)} to find students by "
                         "(a Canvas gradebook export has them)")
    # Canvas's export has a "Points Possible" row and a test student: neither is a student of the class.
    return [{k: (v or "").strip() for k, v in row.items() if k} for row in rows
            if "Points Possible" not in (row.get("Student") or "")]


@dataclass(frozen=True)
class Roster:
    """The roster matched to the class folder."""

    students: dict[str, CanvasStudent]  # by folder name
    absent: list[CanvasStudent]  # on the roster, with no folder: nothing handed in (empty unless `whole_class`)


def _canvas_student(row: dict[str, str], name: str) -> CanvasStudent:
    return CanvasStudent(row.get("Student") or name, row.get("ID", ""), row.get("SIS User ID", ""),
                         row.get("SIS Login ID", ""), row.get("Section", ""))


def match_roster(students: list[str], roster: list[dict[str, str]], *, whole_class: bool = True) -> Roster:
    """The Canvas identity of each student (folder name), and, when `students` is the `whole_class`, the roster's
    students who handed nothing in; a GradeError naming every folder the roster lacks or matches twice."""
    by_column: dict[str, dict[str, list[dict[str, str]]]] = {column: {} for column in MATCHED_BY}
    for row in roster:
        for column in MATCHED_BY:
            if row.get(column):
                by_column[column].setdefault(row[column], []).append(row)
    found, unknown, ambiguous, matched = {}, [], [], set()
    for student in students:
        rows = next((by_column[c][student] for c in MATCHED_BY if student in by_column[c]), [])
        if not rows:
            unknown.append(student)
        elif len(rows) > 1:
            ambiguous.append(student)
        else:
            matched.add(id(rows[0]))
            found[student] = _canvas_student(rows[0], student)
    problems = []
    if unknown:
        problems.append(f"not on the roster: {', '.join(unknown)} (looked in its {', '.join(MATCHED_BY)} columns)")
    if ambiguous:
        problems.append(f"on the roster more than once: {', '.join(ambiguous)}")
    if problems:
        raise GradeError("; ".join(problems))
    absent = [_canvas_student(row, next(row[c] for c in MATCHED_BY if row.get(c))) for row in roster
              if whole_class and id(row) not in matched and any(row.get(c) for c in MATCHED_BY)]
    return Roster(found, absent)


def canvas_rows(state: ClassGrades, *, assignment: str, per_kata: bool = False, roster: Roster | None = None,
                absent_blank: bool = False) -> list[list]:
    """The gradebook CSV's rows: the header, Points Possible, then a row per student. One column for the
    assignment (the graded katas' total) or, `per_kata`, one per kata titled "<assignment>: <id> <title>".
    The roster's absent students (nothing handed in) get 0, or, `absent_blank`, a blank Canvas leaves alone."""
    columns = ([(f"{assignment}: {k.id} {k.title}", [k]) for k in state.katas] if per_kata
               else [(assignment, list(state.katas))])
    rows = [[*IDENTITY, *[name for name, _ in columns]],
            ["Points Possible", "", "", "", "", *[_number(sum(k.points for k in katas)) for _, katas in columns]]]
    for submission in state.submissions:
        who = (roster.students if roster else {}).get(submission.student) or CanvasStudent(submission.student)
        cells = []
        for _, katas in columns:
            grades = [state.grades.get((submission.student, k.id)) for k in katas]
            # A column is its katas' points, blank until every one of them is graded (Canvas keeps blank cells).
            cells.append("" if None in grades else _number(sum(g.points for g in grades)))
        rows.append([*who.cells(), *cells])
    # Left out, an absent student would keep whatever Canvas had: most often no grade, never the 0 they earned.
    rows += [[*who.cells(), *["" if absent_blank else 0] * len(columns)] for who in (roster.absent if roster else [])]
    return no_formulas(rows)


def write_canvas(out: Path, state: ClassGrades, *, assignment: str, per_kata: bool = False,
                 roster: Roster | None = None, absent_blank: bool = False) -> Path:
    buffer = io.StringIO()
    csv.writer(buffer).writerows(canvas_rows(state, assignment=assignment, per_kata=per_kata, roster=roster,
                                             absent_blank=absent_blank))
    return _replace(out / CANVAS_FILE, buffer.getvalue())
