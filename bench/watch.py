"""What the warm pool saves `kata watch`, side by side: sessions with the pool and with `KATA_POOL=0`.

A real `kata watch 9.1` in a pseudo-terminal (pexpect), its exercise saved `--saves` times with the
reference solution (a comment changed each time), each save once the previous check's next grading
process is ready and waiting. Per save:
- save to verdict: from the write to the verdict on screen (both modes grade with a process prepared
  ahead, so this is about the checks alone, plus the 150 ms debounce);
- save to ready again: to when the next prepared process has loaded everything and waits (the CPU time
  of the session's process tree stops growing); a save before then waits for it;
- CPU seconds: user + system of the whole process tree (kata, the zygote, every grading process, the
  reaped ones included) over the cycle.
Sessions alternate (cold, pooled, cold, ...) so both see the same load; medians over every save.
Linux (reads /proc).

    python bench/watch.py [--sessions 3] [--saves 4]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pexpect

from kata.pool import POOL_VARIABLE

REPO = Path(__file__).resolve().parents[1]
COURSE_PARTS = ("exercises", "graders", "solutions")
TICK = os.sysconf("SC_CLK_TCK")
SETTLED_S, SETTLED_CPU = 0.5, 0.02  # ready: the tree used under 0.02 CPU s in the last 0.5 s


def tree_cpu(root: int) -> float:
    """CPU seconds of `root` and its live descendants, each with its reaped children's."""
    stats = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                fields = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(name)] = (int(fields[1]), sum(int(f) for f in fields[11:15]))  # ppid; utime..cstime
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += stats.get(pid, (0, 0))[1]
        todo += [p for p, (ppid, _) in stats.items() if ppid == pid]
    return total / TICK


def settle(root: int) -> tuple[float, float]:
    """Wait until the tree is idle; when it became so (monotonic) and its CPU seconds then."""
    samples = [(time.monotonic(), tree_cpu(root))]
    while True:
        time.sleep(0.05)
        samples.append((time.monotonic(), tree_cpu(root)))
        old = [s for s in samples if s[0] <= samples[-1][0] - SETTLED_S]
        if old and samples[-1][1] - old[-1][1] < SETTLED_CPU:
            since = next(s for s in samples if samples[-1][1] - s[1] < SETTLED_CPU)
            return since[0], samples[-1][1]


def session(pooled: bool, saves: int, solution: str) -> list[tuple[float, float, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "course"
        for part in COURSE_PARTS:  # a private copy: the saves never touch the repository's exercise
            shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy2(REPO / "course.toml", root / "course.toml")
        exercise = root / "exercises" / "9.1-softmax" / "exercise.py"
        env = {**os.environ, "KATA_COURSE": str(root), "KATA_PROGRESS": str(root / "progress.json"),
               POOL_VARIABLE: "1" if pooled else "0", "NO_COLOR": "1", "TERM": "xterm"}
        kata = shutil.which("kata", path=os.path.dirname(sys.executable)) or "kata"
        child = pexpect.spawn(kata, ["watch", "9.1"], cwd=str(root), env=env, encoding="utf-8",
                              dimensions=(60, 110), timeout=300)
        try:
            child.expect("not implemented yet")
            child.expect("watching for saves")
            _, cpu = settle(child.pid)
            cycles = []
            for i in range(saves):
                saved = time.monotonic()
                exercise.write_text(f"{solution}\n# save {i}\n", encoding="utf-8")
                child.expect("checking")
                child.expect(r"Kata 9\.1 passed")
                verdict = time.monotonic() - saved
                child.expect("watching for saves")
                ready, now = settle(child.pid)
                cycles.append((verdict, ready - saved, now - cpu))
                cpu = now
            child.send("q")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
        return cycles


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=3, help="sessions of each kind")
    parser.add_argument("--saves", type=int, default=4, help="saves per session")
    args = parser.parse_args(argv)
    solution = (REPO / "solutions" / "9.1-softmax" / "solution.py").read_text(encoding="utf-8")
    load_at_start = os.getloadavg()
    cold, pooled = [], []
    for _ in range(args.sessions):
        cold += session(False, args.saves, solution)
        pooled += session(True, args.saves, solution)
    print(f"{os.cpu_count()} CPUs; load average {load_at_start[0]:.2f} at the start, "
          f"{os.getloadavg()[0]:.2f} at the end; {args.sessions} sessions x {args.saves} saves of each kind")
    print(f"{'median per save':<28}{f'cold ({POOL_VARIABLE}=0)':>16}{'pooled':>10}{'ratio':>8}")
    for column, label in enumerate(("save to verdict, s", "save to ready again, s", "CPU seconds")):
        c, p = statistics.median(x[column] for x in cold), statistics.median(x[column] for x in pooled)
        print(f"{label:<28}{c:>16.2f}{p:>10.2f}{c / p:>8.2f}")


if __name__ == "__main__":
    main()
