"""What the bubblewrap sandbox of `kata grade` and its memory cgroup cost per graded unit, side by side
with the same unit graded without them, in the same run; and what kata grade's warm pool saves.

Grades the reference solution of kata 9.1 (every check runs to the end) through `kata.runner.run_kata`,
in turn: not isolated (as `kata check` does), in bubblewrap alone, in bubblewrap inside a memory cgroup
of its own (as `kata grade` does cold), and forked from a warm zygote in the kata's sandbox, in walls
and a memory cgroup of its own (as `kata grade` does with its pool), so all see the same machine load.

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
from unittest import mock

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kata import runner  # noqa: E402  (after the path: the bench runs from a clone)
from kata.course import load_course  # noqa: E402
from kata.grading import cgroup, isolation  # noqa: E402
from kata.pool import Pool  # noqa: E402


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
    no_cgroup = cgroup.Support(None, "switched off for the comparison")
    modes = {"in-process guard only (kata check)": (False, no_cgroup, False),
             f"in {support.describe().split(':')[0]}": (True, no_cgroup, False)}
    if cgroup.probe().available:
        version = cgroup.probe().place.version
        modes[f"the same + memory cgroup v{version} (kata grade, cold)"] = (True, cgroup.probe(), False)
        modes["the same, forked from a warm zygote (kata grade)"] = (True, cgroup.probe(), True)
    with tempfile.TemporaryDirectory() as tmp, Pool(course, 1, sandboxed=True) as pool:
        os.environ["KATA_PROGRESS"] = str(Path(tmp) / "progress.json")
        solution = Path(tmp) / "9.1-softmax.py"
        solution.write_bytes(kata.solution.read_bytes())
        times: dict[str, list[float]] = {label: [] for label in modes}
        checks: dict[str, list[float]] = {label: [] for label in modes}  # the checks' own seconds in the unit
        for round_ in range(args.rounds + 1):  # round 0 warms the file cache for every mode
            for label, (isolate, memory, warm) in modes.items():
                with mock.patch.object(cgroup, "probe", lambda memory=memory: memory):
                    started = time.perf_counter()
                    result = runner.run_kata(course, kata, solution, isolate=isolate, pool=pool if warm else None)
                    if round_:
                        times[label].append(time.perf_counter() - started)
                        checks[label].append(sum(check.seconds for check in result.checks))
                assert result.passed, (label, result.outcome, result.message)
    print(f"{'grading of kata 9.1 (reference)':<52}{'median s':>10}{'min s':>8}{'max s':>8}{'checks s':>10}   "
          f"(n={args.rounds}, interleaved; checks: their own time, median)")
    medians = {label: statistics.median(runs) for label, runs in times.items()}
    for label, runs in times.items():
        print(f"{label:<52}{medians[label]:>10.2f}{min(runs):>8.2f}{max(runs):>8.2f}"
              f"{statistics.median(checks[label]):>10.2f}")
    plain = next(iter(medians.values()))
    for label, median in list(medians.items())[1:]:
        print(f"{label}: {median - plain:+.2f} s per unit against the first (ratio of medians {median / plain:.2f})")
    if len(medians) == 4:
        cold, warm = list(medians.values())[2:]
        print(f"kata grade's warm pool: {warm:.2f} s against {cold:.2f} s cold per unit ({cold / warm:.2f}× faster)")

if __name__ == "__main__":
    main()
