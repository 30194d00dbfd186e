"""`kata grade` against `nbgrader autograde` on the same generated class, in the same run.

A class of N students (default 20; each kata answered with the reference, the stub or a planted
mistake, drawn with a fixed seed: bench/classroom.py) is graded five ways, from scratch each time:
`kata grade --jobs 1` and `--jobs 2` with its warm pool (the default: units forked from zygotes in the
sandbox) and cold (`KATA_POOL=0`: each unit starts Python and torch in a sandbox of its own), and
`nbgrader autograde` of the same code as notebooks (the course's nbgrader export, released, the answer
cells filled in). nbgrader grades one notebook at a time: it has no --jobs. Prints submissions
(students) per minute for each, the ratios, whether every check came out the same warm and cold, and
whether every student got the same total from kata grade and nbgrader.

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
POOL = {"warm": "1", "cold": "0"}  # KATA_POOL
RUNS = [("warm", 1), ("warm", 2), ("cold", 1), ("cold", 2)]


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
        timings, totals, checks = {}, {}, {}
        for pool, jobs in RUNS:
            label, out = f"kata grade --jobs {jobs}, {pool}", tmp / f"grades-{pool}-j{jobs}"
            seconds, stdout = run([kata_exe, "grade", str(tmp / "class"), "--katas", ids, "--jobs", str(jobs),
                                   "--out", str(out), "--json"], REPO, {**env, "KATA_POOL": POOL[pool]})
            timings[label] = seconds
            totals[label] = {s["student"]: s["total"] for s in json.loads(stdout)["students"]}
            checks[label] = check_rows(out / "checks.csv")

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
    for label in totals:
        print(f"speed-up of {label} over nbgrader autograde: {nb / timings[label]:.2f}×")
    for jobs in (1, 2):
        print(f"speed-up of the warm pool over cold units, --jobs {jobs}: "
              f"{timings[f'kata grade --jobs {jobs}, cold'] / timings[f'kata grade --jobs {jobs}, warm']:.2f}×")
    rows = list(checks.values())
    alike = "yes" if rows.count(rows[0]) == len(rows) else "NO"
    print(f"every check the same in the {len(rows)} kata grade runs: {alike} ({len(rows[0])} checks)")
    first = next(iter(totals.values()))
    same = [s for s in plan
            if abs(first[s] - nb_totals.get(s, -1)) < 1e-3 and all(t[s] == first[s] for t in totals.values())]
    print(f"same total from kata grade (every run) and nbgrader: {len(same)} of {n} students")
    for student in sorted(set(plan) - set(same)):
        print(f"  {student}: kata grade {[t[student] for t in totals.values()]}, nbgrader {nb_totals.get(student)}")


def check_rows(path: Path) -> list[tuple]:
    """Every check of every unit as `checks.csv` has it, in a fixed order."""
    with open(path, newline="") as f:
        return sorted(tuple(row.values()) for row in csv.DictReader(f))


if __name__ == "__main__":
    main()
