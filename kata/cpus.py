"""How many CPUs this process may use: what sizes torch's threads and `kata grade`'s default --jobs.

`os.cpu_count()` counts the machine's CPUs. A container (Gradescope's, a Kubernetes pod) is usually given
fewer: a CPU quota of its cgroup (`cpu.max` in cgroup v2; `cpu.cfs_quota_us` over `cpu.cfs_period_us` in
v1), or a set of CPUs to run on (`sched_getaffinity`). Threads sized for the host then take turns on the
quota and are throttled, and a check runs slower than on a laptop."""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")


def usable_cpus() -> int:
    """The CPUs this process may run on, fewer if a cgroup's CPU quota (rounded up) allows fewer; at least 1."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    quota = cpu_quota()
    return max(1, min(cpus, math.ceil(quota)) if quota is not None else cpus)


def cpu_quota(root: Path | None = None, proc_cgroup: Path | None = None) -> float | None:
    """The CPU quota of this process's cgroup and the ones above it (the smallest, in CPUs), or None if none."""
    root = CGROUP_ROOT if root is None else root
    try:
        lines = (PROC_CGROUP if proc_cgroup is None else proc_cgroup).read_text().splitlines()
    except OSError:
        return None
    quotas = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2: one hierarchy
            quotas += [_v2(folder) for folder in _upwards(root, path)]
        elif "cpu" in controllers.split(","):  # v1: the cpu controller's own hierarchy
            mount = next((root / name for name in ("cpu", controllers) if (root / name).is_dir()), None)
            if mount is not None:
                quotas += [_v1(folder) for folder in _upwards(mount, path)]
    found = [q for q in quotas if q is not None]
    return min(found) if found else None


def _upwards(mount: Path, path: str) -> list[Path]:
    """The cgroup's folder and those above it to the mount; the mount alone where the path is not under it
    (a container sees its own cgroup as the root)."""
    folder = mount / path.strip("/")
    if not folder.is_dir():
        return [mount]
    return [folder, *[p for p in folder.parents if p == mount or mount in p.parents]]


def _v2(folder: Path) -> float | None:
    try:
        quota, period = (folder / "cpu.max").read_text().split()
    except (OSError, ValueError):
        return None
    return None if quota == "max" else int(quota) / int(period)


def _v1(folder: Path) -> float | None:
    try:
        quota = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota <= 0 or period <= 0 else quota / period
