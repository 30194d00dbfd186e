"""How long `kata check 9.1` takes, side by side with `python -c "import torch"` in the same run.

The grading child has to import torch, so that import is the floor; the product aims at a whole check
costing at most 1.3 times it. Runs are interleaved (torch, check, torch, check, ...) so both see the
same machine load. The check grades the reference solution, so every check runs to the end. Python's
bytecode caching is as in the caller's environment (a student's is on; `env -u PYTHONDONTWRITEBYTECODE`
where a machine turns it off), and the output says which.

    python bench/check_latency.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(command: list[str], env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    kata = shutil.which("kata", path=os.path.dirname(sys.executable)) or "kata"
    with tempfile.TemporaryDirectory() as tmp:
        solution = Path(tmp) / "solution.py"
        shutil.copy(REPO / "solutions" / "9.1-softmax" / "solution.py", solution)
        env = {**os.environ, "KATA_COURSE": str(REPO), "KATA_PROGRESS": str(Path(tmp) / "progress.json")}
        baseline_cmd = [sys.executable, "-c", "import torch"]
        check_cmd = [kata, "check", "9.1", "--file", str(solution)]
        timed(baseline_cmd, env), timed(check_cmd, env)  # warm the file cache for both
        baseline, check = [], []
        for _ in range(args.rounds):
            baseline.append(timed(baseline_cmd, env))
            check.append(timed(check_cmd, env))
    b, c = statistics.median(baseline), statistics.median(check)
    print(f"{'command':<36}{'median s':>10}{'min s':>8}{'max s':>8}   (n={args.rounds}, interleaved)")
    for label, runs, median in (('python -c "import torch"', baseline, b), ("kata check 9.1 (reference)", check, c)):
        print(f"{label:<36}{median:>10.2f}{min(runs):>8.2f}{max(runs):>8.2f}")
    print(f"ratio of medians: {c / b:.2f} (target <= 1.30)")
    caching = "off (PYTHONDONTWRITEBYTECODE is set: kata's own modules are compiled on every run)" \
        if os.environ.get("PYTHONDONTWRITEBYTECODE") else "on (Python's default)"
    print(f"bytecode caching: {caching}")


if __name__ == "__main__":
    main()
