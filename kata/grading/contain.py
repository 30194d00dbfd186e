"""The walls a warm unit builds around itself inside its zygote's sandbox (Linux; `kata.grading.zygote`).

A cold unit of `kata grade` gets a bubblewrap sandbox of its own (`kata.grading.isolation`). A warm unit
is forked by a zygote that lives in such a sandbox, one per kata, and that grades one unit after another:
whatever one student's unit leaves there must be gone before the next, and nothing of it may reach the
zygote. So, right after the fork, the unit's first process (`contain`):

1. makes a new user namespace, and in it new mount, PID and IPC namespaces. A user namespace needs no
   privilege, and its capabilities count only for what it owns: nothing of the zygote's;
2. forks the new PID namespace's init, which mounts fresh, size-limited tmpfs on /tmp and /dev/shm (the
   zygote's sandbox mounts everything else read-only, /dev included), drops every capability and sets
   `no_new_privs`, before any of the student's code exists;
3. the init forks the process that grades, PID 2 as under bubblewrap's own init (an init ignores the
   signals it sends itself; a cold unit does not). When the init ends, the kernel kills every process
   left in the namespace, double-forked or in a session of its own.
Each process dies with its parent (a parent-death signal) and exits with its child's status the way
bwrap does (128 + the signal of a killed child). The runner finds the grading process through the unit's
memory cgroup (`cgroup.UnitGroup.grading_pid`), as it does under a cold unit's bwrap.

The zygote's sandbox maps a uid other than 0 (`isolation.command(warm_info_fd=...)`): a new user namespace may
map root only with CAP_SETFCAP, which the sandbox dropped. The new PID namespace's /proc cannot be
mounted (the sandbox's /proc is partly covered, and the kernel refuses to reveal it again), so /proc
still lists the zygote; it cannot be named by a signal, `ptrace` or `prlimit` from a namespace it is not
in, and it is not dumpable (`protect_zygote`), so its /proc/PID/mem and environ are closed to the unit.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
from pathlib import Path

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x08000000, 0x10000000, 0x20000000
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x1000, 0x4000, 0x40000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
_CAPABILITY_VERSION_3 = 0x20080522


class ContainError(OSError):
    """A wall could not be built: the unit must not run."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise ContainError(errno, f"{what}: {os.strerror(errno)}")


def protect_zygote() -> None:
    """The zygote: not dumpable, so a unit of the same uid can neither trace it nor read its memory."""
    _check(_libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")


def contain(tmp_bytes: int, shm_bytes: int) -> None:
    """Return in the grading process, inside its own namespaces; the processes above it never return."""
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC), "unshare")
    _write("/proc/self/setgroups", "deny")  # required before an unprivileged gid_map
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    _fork_and_wait(libc)  # the namespace's first process, its init, goes on
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    for target, size in (("/tmp", tmp_bytes), ("/dev/shm", shm_bytes)):
        fresh_tmpfs(libc, target, size)
    drop_capabilities(libc)
    _fork_and_wait(libc)  # the grading process goes on: PID 2, as under bwrap's init


def _fork_and_wait(libc: ctypes.CDLL) -> None:
    """Fork; the child returns, set to die with its parent. The parent closes what the child holds,
    reaps every process that ends (an init must) until the child does, and exits as bwrap does: the
    child's exit status, or 128 + the signal that killed it."""
    child = os.fork()
    if child == 0:
        _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
        return
    for name in os.listdir("/proc/self/fd"):
        if int(name) > 2:
            with contextlib.suppress(OSError):  # the listing's own descriptor, closed already
                os.close(int(name))
    while True:
        pid, status = os.wait()
        if pid == child:
            os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status))


def fresh_tmpfs(libc: ctypes.CDLL, target: str, size: int) -> None:
    """An empty tmpfs of `size` bytes on `target`, with what the sandbox mounted under it (the course, when
    it lies in /tmp) mounted again in the same places: bound from the old tree, read-only as they were."""
    inner = mounts_under(target, Path("/proc/self/mountinfo").read_text())
    old = os.open(target, os.O_PATH | os.O_DIRECTORY)  # the old tree stays reachable through it
    try:
        _check(libc.mount(b"tmpfs", target.encode(), b"tmpfs", MS_NOSUID | MS_NODEV,
                          f"size={size},mode=1777".encode()), f"mount tmpfs {target}")
        for relative in inner:
            source, place = f"/proc/self/fd/{old}/{relative}", Path(target, relative)
            place.parent.mkdir(parents=True, exist_ok=True)
            place.mkdir() if os.path.isdir(source) else place.touch()
            _check(libc.mount(source.encode(), str(place).encode(), None, MS_BIND | MS_REC, None),
                   f"mount --rbind {target}/{relative}")
    finally:
        os.close(old)


def mounts_under(target: str, mountinfo: str) -> list[str]:
    """The mount points strictly under `target`, relative to it, outermost only (a recursive bind of each
    brings what is mounted inside it), from the text of /proc/self/mountinfo."""
    points = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 4:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            if point.startswith(target.rstrip("/") + "/"):
                points.append(point[len(target.rstrip("/")) + 1:])
    outermost = [p for p in points if not any(p.startswith(q + "/") for q in points)]
    return sorted(set(outermost))


def drop_capabilities(libc: ctypes.CDLL) -> None:
    """No capability, even in the unit's own user namespace, and none to be gained by exec."""
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    _check(libc.capset(ctypes.byref(Header(_CAPABILITY_VERSION_3, 0)), (Data * 2)()), "capset")
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)
