"""What `nbgrader autograde` costs an instructor per student, side by side with `kata check` of the same code.

Exports the course (`kata nbgrader export`), releases it, submits two students (one answers every
notebook with the reference solution, one hands in the untouched release), autogrades each student
alone and times it; the baseline is `kata check` of every kata on the reference solution, the same
checks outside nbgrader, in the same run. Prints the scores too: full marks and zero.

    python bench/autograde.py [--katas 9.1,9.4]
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
BIN = os.path.dirname(sys.executable)
STUDENTS = ("reference", "untouched")


def run(command: list[str], cwd: Path, env: dict) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return seconds


def submit(root: Path) -> None:
    """Each student's copy of each released notebook; "reference" answers with the source's solution cell."""
    for source in sorted((root / "source").glob("*/*.ipynb")):
        assignment = source.parent.name
        answers = [c.source for c in nbformat.read(source, as_version=4).cells]
        for student in STUDENTS:
            nb = nbformat.read(root / "release" / assignment / source.name, as_version=4)
            if student == "reference":
                for cell, answer in zip(nb.cells, answers, strict=True):
                    if cell.metadata.get("nbgrader", {}).get("solution"):
                        cell.source = answer
            target = root / "submitted" / student / assignment / source.name
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--katas", default="", help="only these katas (comma-separated ids); default: all")
    args = parser.parse_args()
    kata = shutil.which("kata", path=BIN) or "kata"
    nbgrader = [sys.executable, "-m", "nbgrader"]
    with tempfile.TemporaryDirectory(prefix="kata-bench-") as tmp:
        root = Path(tmp) / "grading"
        env = {**os.environ, "KATA_COURSE": str(REPO), "KATA_PROGRESS": str(Path(tmp) / "progress.json"),
               "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}
        export = [kata, "nbgrader", "export", str(root), *(["--katas", args.katas] if args.katas else [])]
        run(export, REPO, env)
        generate = run([*nbgrader, "generate_assignment", "*"], root, env)
        submit(root)
        n = len(list((root / "source").glob("*/*.ipynb")))
        timings = {s: run([*nbgrader, "autograde", "*", "--student", s, "--create"], root, env) for s in STUDENTS}
        run([*nbgrader, "export", "--to", str(root / "grades.csv")], root, env)
        with open(root / "grades.csv", newline="") as f:
            scores = {}
            for row in csv.DictReader(f):
                scores[row["student_id"]] = scores.get(row["student_id"], 0.0) + float(row["raw_score"])
        solutions = sorted((REPO / "solutions").glob("*/solution.py"))
        wanted = {k.strip() for k in args.katas.split(",") if k.strip()}
        checks = 0.0
        for solution in solutions:
            kata_id = solution.parent.name.split("-", 1)[0]
            if not wanted or kata_id in wanted:
                checks += run([kata, "check", kata_id, "--file", str(solution)], REPO, env)
    print(f"{n} notebooks per student; generate_assignment {generate:.1f} s")
    print(f"{'':<44}{'seconds':>9}{'per notebook':>14}{'score':>8}")
    for student in STUDENTS:
        label = f"nbgrader autograde, student '{student}'"
        print(f"{label:<44}{timings[student]:>9.1f}{timings[student] / n:>14.1f}{scores[student]:>8g}")
    print(f"{'baseline: kata check of each reference':<44}{checks:>9.1f}{checks / n:>14.1f}")
    print(f"ratio autograde (reference) / kata check: {timings['reference'] / checks:.2f}")


if __name__ == "__main__":
    main()
