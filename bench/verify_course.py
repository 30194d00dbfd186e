"""`kata verify` of the whole course, one command as course authors run it, side by side with one `kata
check` of each kata's reference solution in the same run (the least one grading of the kata costs).

`kata verify` grades each kata's reference under three seeds, its derived stub, every planted mistake and
every alternative through one queue (`--jobs`, default the CPU count, at a time). Prints the whole
command's wall time and, per kata, its runs and their seconds added up (its share of the work: the runs of
all katas share the jobs, so a kata has no wall time of its own), the slowest run and one cold check.

    python bench/verify_course.py [--jobs N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kata.course import load_course

REPO = Path(__file__).resolve().parents[1]


def timed(command: list[str], env: dict) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO)
    return time.perf_counter() - started, done


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args(argv)
    kata = shutil.which("kata", path=os.path.dirname(sys.executable)) or "kata"
    course = load_course(REPO)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "KATA_COURSE": str(REPO), "KATA_PROGRESS": str(Path(tmp) / "progress.json")}
        load = os.getloadavg()[0]
        verify_s, done = timed([kata, "verify", "--json", "--jobs", str(args.jobs)], env)
        reports = {r["kata"]: r for r in json.loads(done.stdout)["katas"]}
        checks = {k.id: timed([kata, "check", k.id, "--file", str(k.solution)], env)[0] for k in course.katas}
    print(f"kata verify, {args.jobs} jobs, {os.cpu_count()} CPUs, load average {load:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end")
    print(f"{'kata':<30}{'runs':>6}{'sound':>7}{'run s (sum)':>13}{'slowest run s':>15}{'1 check s':>11}")
    for k in course.katas:
        r = reports[k.id]
        print(f"{k.id + ' ' + k.slug:<30}{len(r['runs']):>6}{'yes' if r['ok'] else 'NO':>7}"
              f"{sum(run['seconds'] for run in r['runs']):>13.1f}{r['slowest_seconds']:>15.1f}{checks[k.id]:>11.1f}")
    total_runs = sum(len(r["runs"]) for r in reports.values())
    work = sum(run["seconds"] for r in reports.values() for run in r["runs"])
    sound = "yes" if all(r["ok"] for r in reports.values()) else "NO"
    print(f"{'whole course':<30}{total_runs:>6}{sound:>7}{work:>13.1f}{'':>15}{sum(checks.values()):>11.1f}")
    print(f"kata verify of the whole course: {verify_s:.1f} s wall ({verify_s / sum(checks.values()):.1f} times "
          f"one check of every kata)")


if __name__ == "__main__":
    main()
