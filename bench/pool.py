"""The warm grading pool (`kata.pool`) against cold grading, side by side in one run.

1. One grading unit: kata 9.1's reference graded through `kata.runner`, cold (a new Python that imports
   torch) and forked from a warm zygote, interleaved (cold, pooled, cold, ...) so both see the same
   load; median, min and max over the rounds. The pool is started (and its first unit run) before the
   rounds: its start-up is printed apart.
2. `kata verify 9.1 9.2 --jobs 2`, wall time, with its pool and with `KATA_POOL=0` (every run cold),
   interleaved likewise.

    python bench/pool.py [--rounds 9] [--verify-rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kata import runner
from kata.course import load_course
from kata.pool import POOL_VARIABLE, Pool

REPO = Path(__file__).resolve().parents[1]
VERIFIED = ("9.1", "9.2")


def grade_once(course, kata, pool: Pool | None) -> float:
    started = time.perf_counter()
    result = runner.run_kata(course, kata, kata.solution, pool=pool)
    seconds = time.perf_counter() - started
    if result.outcome != runner.PASSED:
        sys.exit(f"the reference of {kata.id} did not pass ({'pooled' if pool else 'cold'}): {result.message}")
    return seconds


def verify_once(env: dict) -> float:
    kata = shutil.which("kata", path=os.path.dirname(sys.executable)) or "kata"
    started = time.perf_counter()
    done = subprocess.run([kata, "verify", *VERIFIED, "--jobs", "2", "--json"], env=env, capture_output=True,
                          text=True, cwd=REPO)
    seconds = time.perf_counter() - started
    if not json.loads(done.stdout)["ok"]:
        sys.exit(f"kata verify {' '.join(VERIFIED)} found a problem ({env.get(POOL_VARIABLE, 'pool')}):\n{done.stdout}")
    return seconds


def row(label: str, runs: list[float]) -> str:
    return f"{label:<44}{statistics.median(runs):>10.2f}{min(runs):>8.2f}{max(runs):>8.2f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9, help="grading units of each kind")
    parser.add_argument("--verify-rounds", type=int, default=2, help="kata verify runs of each kind")
    args = parser.parse_args(argv)
    load_at_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "KATA_COURSE": str(REPO), "KATA_PROGRESS": str(Path(tmp) / "progress.json")}
        course = load_course(REPO)
        kata = course.find("9.1")
        cold, pooled = [], []
        grade_once(course, kata, None)  # the file cache warm for both
        with Pool(course, 1) as pool:
            started = time.perf_counter()
            grade_once(course, kata, pool)
            first_pooled = time.perf_counter() - started
            for _ in range(args.rounds):
                cold.append(grade_once(course, kata, None))
                pooled.append(grade_once(course, kata, pool))
        verify_cold, verify_pooled = [], []
        for _ in range(args.verify_rounds):
            verify_cold.append(verify_once({**env, POOL_VARIABLE: "0"}))
            verify_pooled.append(verify_once({**env, POOL_VARIABLE: "1"}))
    print(f"{os.cpu_count()} CPUs; load average {load_at_start[0]:.2f} at the start, "
          f"{os.getloadavg()[0]:.2f} at the end")
    print(f"{'':<44}{'median s':>10}{'min s':>8}{'max s':>8}")
    print(f"1. one unit, kata 9.1's reference (n={args.rounds} each, interleaved)")
    print(row("   cold (python -m kata.grading.child)", cold))
    print(row("   pooled (forked from a warm zygote)", pooled))
    print(f"   ratio of medians cold / pooled: {statistics.median(cold) / statistics.median(pooled):.2f}; "
          f"the pool's first unit (zygote start-up included): {first_pooled:.2f} s")
    print(f"2. kata verify {' '.join(VERIFIED)} --jobs 2, wall time (n={args.verify_rounds} each, interleaved)")
    print(row(f"   cold ({POOL_VARIABLE}=0)", verify_cold))
    print(row("   with its pool of 2 zygotes", verify_pooled))
    print(f"   ratio of medians cold / pooled: {statistics.median(verify_cold) / statistics.median(verify_pooled):.2f}")


if __name__ == "__main__":
    main()
