"""The set-up a student's checks depend on: what `kata doctor` reports (Python, torch, CUDA, the course, the
progress file, the isolation `kata grade` can use, the packages), and whether `kata` is a command in this
terminal (`kata next` says how to make it one)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from kata import __version__
from kata import progress as prog
from kata.course import CourseError, load_course

# Run in a child, as the grading process runs: the `kata` process itself never imports torch.
TORCH_PROBE = """
import json, torch
cuda = torch.cuda.is_available()
print(json.dumps({"torch": torch.__version__, "cuda": cuda,
                  "gpu": torch.cuda.get_device_name(0) if cuda else None, "threads": torch.get_num_threads()}))
"""


def rows() -> list[tuple[str, str, bool]]:
    """What `kata doctor` reports: (name, value, ok)."""
    found = [("kata", __version__, True),
             ("Python", f"{sys.version.split()[0]} at {sys.executable}", sys.version_info >= (3, 11))]
    started = time.perf_counter()
    probe = subprocess.run([sys.executable, "-c", TORCH_PROBE], capture_output=True, text=True, timeout=120)
    seconds = time.perf_counter() - started
    if probe.returncode != 0:
        found.append(("torch", "cannot be imported: " + (probe.stderr.strip().splitlines() or ["?"])[-1], False))
    else:
        info = json.loads(probe.stdout.strip().splitlines()[-1])
        found.append(("torch", f"{info['torch']} (import takes {seconds:.1f} s, {info['threads']} threads)", True))
        found.append(("CUDA", f"available: {info['gpu']}" if info["cuda"] else
                      "not available: checks run on the CPU (CUDA not verified)", True))
        found.append(("import torch is quiet", "yes" if not probe.stderr.strip() else
                      "no, it writes to stderr (is NumPy installed?): " + probe.stderr.strip().splitlines()[0],
                      not probe.stderr.strip()))
    course = None
    try:
        course = load_course()
        found.append(("course", f"{course.file} ({len(course.katas)} katas)", True))
        path = prog.progress_path(course.root)
        found.append(("progress file", f"{path}" + ("" if path.exists() else " (not created yet)"), True))
    except CourseError as exc:
        found.append(("course", exc.problems[0], False))
    from kata.grading import cgroup, isolation
    from kata.pool import sandboxed_problem

    support = isolation.probe()
    found.append(("your code's walls", walls_trial(), True))
    # `kata grade` refuses to grade without it: an instructor must see ✗ here, with the fix, not find out then.
    found.append(("isolation (kata grade)", support.describe() if support.available else
                  f"none, `kata grade` will refuse to grade: {support.problem}", support.available))
    found.append(("memory limit (kata grade)", cgroup.probe().describe(), True))
    if course is not None:
        problem = sandboxed_problem(course)
        found.append(("warm pool (kata grade)", "each unit forked from a zygote in its kata's sandbox, in walls of "
                      "its own" if not problem else f"none, units start cold: {problem}", True))
    from importlib.metadata import version

    for module in ("pytest", "hypothesis", "rich", "click", "nbgrader"):
        try:
            found.append((module, version(module), True))
        except Exception:
            optional = module == "nbgrader"
            found.append((module, "not installed" + (" (only instructors need it)" if optional else ""), optional))
    return found


WALLS_TRIAL = "from kata.grading import zygote; print(zygote.trial() or 'ok')"


def walls_trial() -> str:
    """What the walls of the student's process are here (`kata.student.walls`), from one trial fork."""
    trial = subprocess.run([sys.executable, "-c", WALLS_TRIAL], capture_output=True, text=True, timeout=60)
    problem = trial.stdout.strip() if trial.returncode == 0 else (trial.stderr.strip().splitlines() or ["?"])[-1]
    if problem == "ok":
        return "namespaces of its own: files read-only, graders hidden, no network, no process left behind"
    return f"none beyond its own process here ({problem}): grading for credit needs them, or root (then nobody)"


def activation_hint(argv0: str | None = None, prefix: str | None = None) -> str | None:
    """How to make `kata` a command, when this `kata` was run by its path (`.venv/bin/kata next`, the
    README's first line) and typing `kata` would not find it; None when it would."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    if Path(argv0).stem != "kata":
        return None  # python -m kata: whoever typed that knows where kata lives
    found = shutil.which("kata")
    if found is not None and Path(found).resolve() == Path(argv0).resolve():
        return None
    env = Path(sys.prefix if prefix is None else prefix)
    with contextlib.suppress(ValueError):  # another drive, on Windows
        env = Path(os.path.relpath(env))
    if os.name == "nt":
        return f"`kata` is not a command in this terminal yet: run {env / 'Scripts' / 'activate'} first."
    return f"`kata` is not a command in this terminal yet: run `source {env / 'bin' / 'activate'}` first."
