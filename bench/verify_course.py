"""`kata verify` of the whole course, kata by kata, side by side with one `kata check` of each kata's
reference solution in the same run (the least one grading of the kata costs).

`kata verify ID` grades the reference under three seeds, the derived stub and every planted mistake
(`--jobs`, default the CPU count, at a time): its wall time over one check's is roughly its number of
runs over the jobs. Prints each kata's figures, the total and the slowest kata.

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
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "KATA_COURSE": str(REPO), "KATA_PROGRESS": str(Path(tmp) / "progress.json")}
        for k in course.katas:
            verify_s, done = timed([kata, "verify", k.id, "--json", "--jobs", str(args.jobs)], env)
            report = json.loads(done.stdout)["katas"][0]
            check_s, _ = timed([kata, "check", k.id, "--file", str(k.solution)], env)
            rows.append((k, verify_s, len(report["runs"]), report["ok"], report["slowest_seconds"], check_s))
    print(f"kata verify, {args.jobs} jobs, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(f"{'kata':<30}{'verify s':>9}{'runs':>6}{'sound':>7}{'slowest run s':>15}{'1 check s':>11}{'ratio':>7}")
    for k, verify_s, runs, ok, slowest, check_s in rows:
        print(f"{k.id + ' ' + k.slug:<30}{verify_s:>9.1f}{runs:>6}{'yes' if ok else 'NO':>7}{slowest:>15.1f}"
              f"{check_s:>11.1f}{verify_s / check_s:>7.1f}")
    total, checks = sum(r[1] for r in rows), sum(r[5] for r in rows)
    slowest = max(rows, key=lambda r: r[1])
    sound = "yes" if all(r[3] for r in rows) else "NO"
    print(f"{'whole course':<30}{total:>9.1f}{sum(r[2] for r in rows):>6}{sound:>7}{'':>15}{checks:>11.1f}"
          f"{total / checks:>7.1f}")
    print(f"slowest kata: {slowest[0].id} {slowest[0].slug}, {slowest[1]:.1f} s")


if __name__ == "__main__":
    main()
