"""A memory limit that counts shared memory: a memory cgroup for each graded unit (Linux).

`RLIMIT_DATA` (`kata.student.walls`) counts what a process writes privately. Memory it shares does not
count there: files in `/tmp` and `/dev/shm` (tmpfs), `memfd_create`, anonymous `MAP_SHARED` mappings
made from C. The in-process guard refuses the ways Python offers, and the sandbox's tmpfs are small, but
grading that counts needs a wall that does not depend on finding every way: a memory cgroup counts every
page charged to its processes, private, shared or tmpfs. `kata grade` (and the nbgrader grade cells)
put each sandboxed unit in a cgroup of its own, limited to

    the kata's `memory_mb` + the sandbox's /tmp and /dev/shm + HEADROOM_MB

(the headroom holds what `RLIMIT_DATA` leaves out on purpose: stacks, the libraries' pages, page cache,
which the kernel reclaims before it kills anything). Past the limit the kernel kills the unit and the
runner reports "used more memory than the kata's limit".

Where the cgroup is made, tried in this order by `probe()`, once per process:
- cgroup v2, beside the grading process's own cgroup, when the parent hands the memory controller to its
  children and may be written (root; a container's root);
- cgroup v2, inside the grading process's own cgroup when that one is delegated (writable): the grading
  process moves into a leaf of its own there (`kata-grading`), since a cgroup v2 with processes cannot
  hand controllers to children. `systemd-run --user --scope -p Delegate=yes kata grade ...` makes one
  for a user without root;
- cgroup v1, inside the grading process's own memory cgroup (root).
Where none works, units still get `RLIMIT_DATA` and the small tmpfs; `kata doctor` says which applies.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HEADROOM_MB = 512
LEAF = "kata-grading"  # the grading process's own leaf, in a delegated cgroup v2
_UNIT_PREFIX = "kata-unit-"
# The unit's first process: a shell that joins the cgroup (its path is $0), then becomes the sandbox.
_ENTER = 'echo $$ > "$0" && exec "$@"'
_SYS_FS_CGROUP = "/sys/fs/cgroup"
DELEGATE = ("run `kata grade` as root, or in a cgroup delegated to you: `systemd-run --user --scope -p "
            "Delegate=yes kata grade ...`")


@dataclass(frozen=True)
class Place:
    """A folder where a cgroup per unit can be made: its hierarchy's version and path."""

    version: int  # 1 or 2
    parent: Path
    move_self: bool = False  # v2 delegated: the grading process first moves into the LEAF beside the units
    home: Path | None = None  # the grading process's own cgroup, where a warm zygote returns after a fork


@dataclass(frozen=True)
class Support:
    """Whether graded units get a memory cgroup here, where, and why not if they do not."""

    place: Place | None
    problem: str = ""

    @property
    def available(self) -> bool:
        return self.place is not None

    def describe(self) -> str:
        if self.place is None:
            return self.problem
        return f"a memory cgroup (v{self.place.version}) for each graded unit: shared memory counts against its limit"


def candidates(proc_cgroup: str, mountinfo: str) -> list[Place]:
    """Where units' cgroups could go, best first, from the text of /proc/self/cgroup and
    /proc/self/mountinfo (pure: nothing is tried)."""
    v2_mount, v1_memory_mount = None, None
    for line in mountinfo.splitlines():
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        root, mount_point = fields[3], fields[4]
        if tail[0] == "cgroup2" and v2_mount is None:
            v2_mount = (root, mount_point)
        elif tail[0] == "cgroup" and "memory" in tail[2].split(",") and v1_memory_mount is None:
            v1_memory_mount = (root, mount_point)
    own_v2, own_v1 = None, None
    for line in proc_cgroup.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            own_v2 = path
        elif "memory" in controllers.split(","):
            own_v1 = path
    found: list[Place] = []
    if v2_mount is not None and own_v2 is not None:
        own = _inside(v2_mount, own_v2)
        if own is not None:
            if own != Path(v2_mount[1]):
                found.append(Place(2, own.parent, home=own))
            found.append(Place(2, own, move_self=True, home=own / LEAF))
    if v1_memory_mount is not None and own_v1 is not None:
        own = _inside(v1_memory_mount, own_v1)
        if own is not None:
            found.append(Place(1, own, home=own))
    return found


def _inside(mount: tuple[str, str], path: str) -> Path | None:
    """The folder of cgroup `path` under a mount of the hierarchy whose root is `mount[0]`."""
    root, mount_point = mount
    if root != "/":
        if path != root and not path.startswith(root.rstrip("/") + "/"):
            return None  # the cgroup lies outside what this mount shows
        path = path[len(root.rstrip("/")):]
    return Path(mount_point, path.lstrip("/"))


@functools.cache
def probe() -> Support:
    """The first place where a limited unit cgroup can really be made and entered (tried with `true`)."""
    try:
        places = candidates(Path("/proc/self/cgroup").read_text(), Path("/proc/self/mountinfo").read_text())
    except OSError:
        return Support(None, "no memory cgroup for graded units: this system has no cgroups (not Linux?); "
                             "shared memory is bounded only by the sandbox's small /tmp and /dev/shm")
    tried = []
    for place in places:
        try:
            if place.version == 2 and "memory" not in (place.parent / "cgroup.controllers").read_text().split():
                raise OSError(0, "no memory controller in this cgroup v2")
            if place.move_self:
                _move_self(place)
            with unit(place, 64 * 1024 * 1024) as group:
                _run_inside(group)
            return Support(place)
        except OSError as exc:
            tried.append(f"{place.parent}: {exc.strerror or exc}")
    where = "; ".join(tried) if tried else f"no cgroup hierarchy with a memory controller under {_SYS_FS_CGROUP}"
    return Support(None, f"no memory cgroup for graded units ({where}): shared memory is bounded only by the "
                         f"sandbox's small /tmp and /dev/shm. For a limit that counts it, {DELEGATE}")


def _move_self(place: Place) -> None:
    """Delegated cgroup v2: move this process into a leaf, then let the cgroup hand out memory."""
    leaf = place.parent / LEAF
    leaf.mkdir(exist_ok=True)
    (leaf / "cgroup.procs").write_text(str(os.getpid()))
    if "memory" not in (place.parent / "cgroup.subtree_control").read_text().split():
        (place.parent / "cgroup.subtree_control").write_text("+memory")


def _run_inside(group: UnitGroup) -> None:
    import subprocess

    done = subprocess.run([*group.enter(), "true"], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise OSError(0, (done.stderr.strip().splitlines() or ["could not join the cgroup"])[-1])


class UnitGroup:
    """One graded unit's cgroup: made with its limit, joined by the unit's first process (`enter()`
    is the command prefix that does it), read after the unit for an out-of-memory kill, then removed."""

    def __init__(self, place: Place, limit_bytes: int):
        self.place = place
        self.path = place.parent / f"{_UNIT_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        self.path.mkdir()
        try:
            if place.version == 2:
                (self.path / "memory.max").write_text(str(limit_bytes))
                _write_if_present(self.path / "memory.swap.max", "0")
                _write_if_present(self.path / "memory.oom.group", "1")  # the kernel kills the whole unit
            else:
                (self.path / "memory.limit_in_bytes").write_text(str(limit_bytes))
                _write_if_present(self.path / "memory.memsw.limit_in_bytes", str(limit_bytes))
        except OSError:
            self.remove()
            raise

    def enter(self) -> list[str]:
        return ["/bin/sh", "-c", _ENTER, str(self.path / "cgroup.procs")]

    def adopt(self, pid: int) -> None:
        """Move process `pid` (a warm zygote, about to fork the unit) into this cgroup: what it forks is
        born here. Its pages already charged stay where they are."""
        (self.path / "cgroup.procs").write_text(str(pid))

    def release(self, pid: int) -> None:
        """Move `pid` back to the grading process's own cgroup, once it has forked the unit."""
        (self.place.home / "cgroup.procs").write_text(str(pid))

    def member(self, inner_pid: int) -> int | None:
        """The pid, as this process sees it, of the member whose pid one namespace further down is
        `inner_pid` (a unit as its zygote's sandbox names it)."""
        return next((pids[0] for pids in self._members() if pids[1:] == [inner_pid]), None)

    def _members(self) -> list[list[int]]:
        """Each member's pid in every PID namespace from this process's down to its own (NSpid)."""
        try:
            members = (self.path / "cgroup.procs").read_text().split()
        except OSError:
            return []
        found = []
        for pid in members:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue  # ended meanwhile
            found += [[int(n) for n in line.split()[1:]] for line in status.splitlines() if line.startswith("NSpid:")]
        return found

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the unit for going over the limit."""
        events = "memory.events" if self.place.version == 2 else "memory.oom_control"
        try:
            for line in (self.path / events).read_text().splitlines():
                name, _, count = line.partition(" ")
                if name == "oom_kill":
                    return int(count) > 0
        except (OSError, ValueError):
            pass
        return False

    def remove(self) -> None:
        """Remove the cgroup once its processes are gone (a killed PID namespace empties within moments)."""
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.05)


def _write_if_present(path: Path, value: str) -> None:
    """Settings some kernels lack (swap accounting off, older v2): the limit above still holds."""
    with contextlib.suppress(OSError):
        path.write_text(value)


@contextlib.contextmanager
def unit(place: Place, limit_bytes: int) -> Iterator[UnitGroup]:
    group = UnitGroup(place, limit_bytes)
    try:
        yield group
    finally:
        group.remove()


def limit_bytes(memory_mb: int, tmpfs_mb: int) -> int:
    """A unit's cgroup limit: the kata's memory limit, its private tmpfs, and HEADROOM_MB."""
    return (memory_mb + tmpfs_mb + HEADROOM_MB) * 1024 * 1024
