"""`kata grade` against `nbgrader autograde` on the same generated class, in the same run.

A class of N students (default 20; each kata answered with the reference, the stub or a planted
mistake, drawn with a fixed seed: bench/classroom.py) is graded three ways, from scratch each time:
`kata grade --jobs 1`, `kata grade --jobs 2` (plain files), and `nbgrader autograde` of the same code
as notebooks (the course's nbgrader export, released, the answer cells filled in). nbgrader grades one
notebook at a time: it has no --jobs. Prints submissions (students) per minute for each, the ratios,
and whether every student got the same total from both graders.

    python bench/grade_vs_nbgrader.py [--students 20] [--katas 9.1,9.2,9.3] [--seed 0]

The default katas keep the nbgrader side to minutes on a 2-core machine; `--katas all` grades the course.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import classroom

from kata.course import load_course

REPO = Path(__file__).resolve().parents[1]
BIN = os.path.dirname(sys.executable)
DEFAULT_KATAS = "9.1,9.2,9.3"


def run(command: list[str], cwd: Path, env: dict) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return seconds, done.stdout


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--katas", default=DEFAULT_KATAS, help="comma-separated kata ids, or 'all'")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    course = load_course(REPO)
    katas, plan = classroom.planned_class(course, args.katas, args.students, args.seed)
    kata_exe = shutil.which("kata", path=BIN) or "kata"
    ids = ",".join(k.id for k in katas)
    with tempfile.TemporaryDirectory(prefix="kata-bench-grade-") as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "KATA_COURSE": str(REPO), "KATA_PROGRESS": str(tmp / "progress.json"),
               "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}
        classroom.write_files(course, plan, tmp / "class")
        timings, totals = {}, {}
        for jobs in (1, 2):
            out = tmp / f"grades-j{jobs}"
            seconds, stdout = run([kata_exe, "grade", str(tmp / "class"), "--katas", ids, "--jobs", str(jobs),
                                   "--out", str(out), "--json"], REPO, env)
            timings[f"kata grade --jobs {jobs}"] = seconds
            totals[jobs] = {s["student"]: s["total"] for s in json.loads(stdout)["students"]}

        root = tmp / "nbgrader"
        run([kata_exe, "nbgrader", "export", str(root), "--katas", ids], REPO, env)
        nbgrader = [sys.executable, "-m", "nbgrader"]
        run([*nbgrader, "generate_assignment", "*"], root, env)
        classroom.write_notebooks(course, plan, root)
        timings["nbgrader autograde"] = run([*nbgrader, "autograde", "*", "--create"], root, env)[0]
        run([*nbgrader, "export", "--to", str(root / "grades.csv")], root, env)
        nb_totals: dict[str, float] = {}
        with open(root / "grades.csv", newline="") as f:
            for row in csv.DictReader(f):
                nb_totals[row["student_id"]] = nb_totals.get(row["student_id"], 0.0) + float(row["raw_score"])

    n = args.students
    print(f"{n} students × {len(katas)} katas ({ids}); answers: "
          + ", ".join(f"{sum(v.split(':')[0] == kind for c in plan.values() for v in c.values())} {kind}"
                      for kind, _ in classroom.KINDS)
          + f"; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(f"{'':<26}{'seconds':>9}{'students/min':>14}{'s/notebook':>12}")
    for label, seconds in timings.items():
        print(f"{label:<26}{seconds:>9.1f}{n / seconds * 60:>14.2f}{seconds / (n * len(katas)):>12.2f}")
    nb = timings["nbgrader autograde"]
    for jobs in (1, 2):
        print(f"speed-up of kata grade --jobs {jobs} over nbgrader autograde: "
              f"{nb / timings[f'kata grade --jobs {jobs}']:.2f}×")
    same = [s for s in plan if abs(totals[1][s] - nb_totals.get(s, -1)) < 1e-3 and totals[1][s] == totals[2][s]]
    print(f"same total from kata grade (both --jobs) and nbgrader: {len(same)} of {n} students")
    for student in sorted(set(plan) - set(same)):
        print(f"  {student}: kata grade {totals[1][student]} / {totals[2][student]}, "
              f"nbgrader {nb_totals.get(student)}")


if __name__ == "__main__":
    main()
