"""What grading a class costs in CPU time: `kata grade --jobs 1` of a generated class (bench/classroom.py:
each kata answered with the reference, the stub or a planted mistake), with its warm pool and cold
(`KATA_POOL=0`), its CPU seconds (user + system, of `kata`, its zygotes and every grading child) per unit
(one kata of one student), beside the floor no cold child avoids, `python -c "import torch"`, measured in
the same run. Prints the CPU-hours of a class of --class-size students at the measured costs per unit.

    python bench/grade_cost.py [--students 4] [--katas all] [--class-size 2000] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import classroom

from kata.course import load_course
from kata.grading import cgroup

REPO = Path(__file__).resolve().parents[1]
BIN = os.path.dirname(sys.executable)


def cpu_seconds(command: list[str], env: dict) -> tuple[float, float, str]:
    """CPU seconds (user + system) of the command and every process it started, wall seconds, stdout.

    Counted by a CPU-accounting cgroup the command starts in, where one can be made (root, cgroup v1's
    cpuacct or v2): a sandboxed unit's processes are reaped by bubblewrap's init, not by their parent,
    so `RUSAGE_CHILDREN`, the fallback, misses them."""
    group = _accounting_group()
    prefix = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(group[0] / "cgroup.procs")] if group else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    try:
        done = subprocess.run([*prefix, *command], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = group[1]() if group else (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    finally:
        if group:
            group[0].rmdir()
    if done.returncode not in (0,):
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return cpu, wall, done.stdout


def _accounting_group() -> tuple[Path, Callable[[], float]] | None:
    """A new cgroup that counts CPU time, and how to read its seconds; None where none can be made."""
    name = f"kata-bench-{os.getpid()}-{time.monotonic_ns()}"
    v1 = Path("/sys/fs/cgroup/cpuacct")
    place = cgroup.probe().place
    try:
        if (v1 / "cpuacct.usage").exists():
            (v1 / name).mkdir()
            return v1 / name, lambda: int((v1 / name / "cpuacct.usage").read_text()) / 1e9
        if place is not None and place.version == 2:
            (place.parent / name).mkdir()
            usage = place.parent / name / "cpu.stat"
            return place.parent / name, lambda: int(usage.read_text().split("usage_usec")[1].split()[0]) / 1e6
    except OSError:
        pass
    return None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=4)
    parser.add_argument("--katas", default="all", help="comma-separated kata ids, or 'all'")
    parser.add_argument("--class-size", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    course = load_course(REPO)
    katas, plan = classroom.planned_class(course, args.katas, args.students, args.seed)
    kata_exe = shutil.which("kata", path=BIN) or "kata"
    with tempfile.TemporaryDirectory(prefix="kata-bench-cost-") as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "KATA_COURSE": str(REPO), "KATA_PROGRESS": str(tmp / "progress.json")}
        classroom.write_files(course, plan, tmp / "class")
        floor = statistics.median(cpu_seconds([sys.executable, "-c", "import torch"], env)[0] for _ in range(3))
        runs = {}
        for pool, variable in (("warm", "1"), ("cold", "0")):
            runs[pool] = cpu_seconds([kata_exe, "grade", str(tmp / "class"), "--katas", ",".join(k.id for k in katas),
                                      "--jobs", "1", "--out", str(tmp / f"out-{pool}"), "--json"],
                                     {**env, "KATA_POOL": variable})
    units = args.students * len(katas)
    class_units = args.class_size * len(katas)
    print(f"{args.students} students × {len(katas)} katas = {units} units, kata grade --jobs 1; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
          f"`python -c 'import torch'`: {floor:.2f} CPU s")
    for pool, (cpu, wall, stdout) in runs.items():
        per_unit = cpu / units
        seconds: dict[str, list[float]] = {}
        for student in json.loads(stdout)["students"]:
            for grade in student["katas"]:
                seconds.setdefault(grade["kata"], []).append(grade["seconds"])
        print(f"{pool}: CPU seconds {cpu:.1f} in all, {per_unit:.2f} per unit (wall {wall:.1f} s); wall seconds per "
              "unit by kata (median): " + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in seconds.items()))
        print(f"  a class of {args.class_size} students × {len(katas)} katas = {class_units} units: "
              f"{per_unit * class_units / 3600:.1f} CPU-hours at {per_unit:.2f} CPU s per unit")
    warm, cold = runs["warm"][0], runs["cold"][0]
    print(f"the warm pool saves {(cold - warm) / units:.2f} CPU s per unit ({cold / warm:.2f}× less CPU); "
          f"each cold unit's own `import torch` alone is {floor * class_units / 3600:.1f} CPU-hours of the class")

if __name__ == "__main__":
    main()
