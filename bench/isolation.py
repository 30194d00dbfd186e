"""What the bubblewrap sandbox of `kata grade` costs per graded unit, side by side with the same unit
graded without it, in the same run.

Grades the reference solution of kata 9.1 (every check runs to the end) through `kata.runner.run_kata`,
alternately isolated (`isolate=True`, as `kata grade` does) and not (as `kata check` does), so both see
the same machine load.

    python bench/isolation.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kata import runner  # noqa: E402  (after the path: the bench runs from a clone)
from kata.course import load_course  # noqa: E402
from kata.grading import isolation  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    support = isolation.probe()
    if not support.available:
        print(f"no sandbox here: {support.problem}")
        return
    course = load_course(REPO)
    kata = course.find("9.1")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["KATA_PROGRESS"] = str(Path(tmp) / "progress.json")
        solution = Path(tmp) / "9.1-softmax.py"
        solution.write_bytes(kata.solution.read_bytes())
        times: dict[bool, list[float]] = {False: [], True: []}
        for isolate in (False, True):  # warm the file cache for both
            runner.run_kata(course, kata, solution, isolate=isolate)
        for _ in range(args.rounds):
            for isolate in (False, True):
                started = time.perf_counter()
                result = runner.run_kata(course, kata, solution, isolate=isolate)
                times[isolate].append(time.perf_counter() - started)
                assert result.passed, (isolate, result.outcome, result.message)
    plain, boxed = statistics.median(times[False]), statistics.median(times[True])
    print(f"{'grading of kata 9.1 (reference)':<40}{'median s':>10}{'min s':>8}{'max s':>8}   "
          f"(n={args.rounds}, interleaved)")
    for label, runs, median in (("in-process guard only (kata check)", times[False], plain),
                                (f"in {support.describe().split(':')[0]} (kata grade)", times[True], boxed)):
        print(f"{label:<40}{median:>10.2f}{min(runs):>8.2f}{max(runs):>8.2f}")
    print(f"sandbox overhead: {boxed - plain:+.2f} s per unit (ratio of medians {boxed / plain:.2f})")


if __name__ == "__main__":
    main()
