"""The walls the student's process builds around itself, before it runs a line of the student's code.

The judge forks the student's process (`kata.grading.spawn`); its first steps, still trusted code:

1. it dies with the judge (a parent-death signal), keeps no descriptor but its socket and stdio, and never
   dumps core;
2. where user namespaces work (Linux), it makes new user, mount, PID, IPC and network namespaces: every
   mount read-only, a fresh size-limited tmpfs on /tmp and /dev/shm (the Python installation shown again
   under /tmp where it lies there), empty folders over the graders and the reference solutions (`hidden`),
   no network, no capability. The namespace's first process (its init) forks the process that serves the
   judge; when the init ends (with the judge), the kernel ends every process left in the namespace,
   double-forked or not;
3. where there are none and it runs as root (a container: Gradescope's, a Kubernetes pod), it becomes the
   unprivileged user `nobody`: it can then neither write what the grading writes nor read what only root
   may (`/autograder/source`) (if nobody can read the Python installation at all); `no_new_privs` always;
4. its memory is limited (`RLIMIT_DATA`; a watchdog where that is not enforced, macOS).

What was built is reported to the judge (`Report`), which writes it into the results: `kata grade` gives
credit only where the walls stood. Nothing here is needed for safety of the verdict itself (the student's
process cannot change what the judge decides); the walls protect the machine, the other students, the
hidden graders and the results files.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import resource
import signal
import sys
import sysconfig
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = (0x00020000, 0x08000000, 0x10000000,
                                                                       0x20000000, 0x40000000)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    0x1, 0x2, 0x4, 0x8, 0x20, 0x1000, 0x4000, 0x40000)
MS_NOATIME, MS_NODIRATIME, MS_RELATIME, MS_STRICTATIME = 0x400, 0x800, 0x200000, 0x1000000
_MOUNT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
                "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME, "strictatime": MS_STRICTATIME}
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
_CAPABILITY_VERSION_3 = 0x20080522
NOBODY = 65534
TMP_MB = 256  # the private /tmp
SHM_MB = 64  # the private /dev/shm
MEMORY_EXIT_CODE = 86  # the watchdog's exit status where RLIMIT_DATA is not enforced


class WallError(OSError):
    """A wall could not be built."""


@dataclass
class Report:
    """What the student's process stands in: its user, whether it has namespaces of its own (and so a
    read-only file system with the graders hidden, no network, a PID namespace), and why not if not."""

    user: str = "same"  # "same" (the grading's user; with namespaces, without its capabilities) or "nobody"
    namespaces: bool = False
    problem: str = ""
    hidden: list[str] = field(default_factory=list)
    signal_pid: int = 0  # the process the judge signals (for the stack) and kills: the server, or its init

    def to_dict(self) -> dict:
        return asdict(self)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise WallError(errno, f"{what}: {os.strerror(errno)}")


def first_steps(keep: set[int]) -> None:
    """Die with the parent, close every descriptor but `keep` and stdio, no core dumps. (Dumpable again: the
    judge that forked it may not be, and an undumpable process cannot write its own user namespace's maps.)"""
    if sys.platform.startswith("linux"):
        parent = os.getppid()
        _check(_libc().prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
        _check(_libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
        if os.getppid() != parent:  # the parent died before the signal was asked for
            os._exit(1)
    for fd in _open_descriptors() - keep - {0, 1, 2}:
        with contextlib.suppress(OSError):
            os.close(fd)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _open_descriptors() -> set[int]:
    folder = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"
    return {int(name) for name in os.listdir(folder)}


def become_nobody() -> None:
    """From root: the unprivileged user nobody, for good (every id, no supplementary group)."""
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, NOBODY)
    os.setresuid(NOBODY, NOBODY, NOBODY)
    if sys.platform.startswith("linux"):  # a change of user made us undumpable: /proc/self is root's then
        _check(_libc().prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")


def build(*, hidden: list[str], keep: set[int]) -> Report:
    """Build the walls (see the module's docstring); returns in the process that serves the judge."""
    first_steps(keep)
    report = Report(signal_pid=os.getpid())
    if sys.platform.startswith("linux"):
        try:
            report.signal_pid = _namespaces(hidden)
            report.namespaces, report.hidden = True, hidden
        except OSError as exc:
            report.problem = f"no namespaces of its own ({exc})"
    else:
        report.problem = "no user namespaces on this system"
    # Root without namespaces (a container that allows none): another user. (With them, root keeps its uid but
    # no capability, sees the files read-only and the graders hidden; nobody might not even read Python.)
    if not report.namespaces and os.geteuid() == 0:
        unreadable = [p for p in PYTHON_DIRS if not _readable_by_others(p)]
        if unreadable:
            report.problem += f"; it stays root: nobody cannot read {unreadable[0]}"
        else:
            try:
                become_nobody()
                report.user = "nobody"
            except OSError as exc:
                report.problem += f"; it stays root ({exc})"
    if sys.platform.startswith("linux"):
        _check(_libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    return report


def _readable_by_others(path: str) -> bool:
    """Whether a user with no claim on `path` (nobody) can read it and every folder above it."""
    current = Path(path)
    for folder in [current, *current.parents]:
        try:
            mode = folder.stat().st_mode
        except OSError:
            return False
        if not mode & 0o004 or (folder.is_dir() and not mode & 0o001):
            return False
    return True


def _namespaces(hidden: list[str]) -> int:
    """Build the namespaces; returns in PID 2 of the new PID namespace, with the init's pid as the judge sees it."""
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET), "unshare")
    _write("/proc/self/setgroups", "deny")  # required before an unprivileged gid_map
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    # The mounts are tried before the fork: a failure leaves this process as it was, in namespaces it never
    # uses beyond them (the PID namespace applies to children only).
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    mountinfo = Path("/proc/self/mountinfo").read_text()
    read_only(libc, mountinfo)
    for target, size in (("/tmp", TMP_MB), ("/dev/shm", SHM_MB)):
        fresh_tmpfs(libc, target, size * 1024 * 1024, mountinfo, PYTHON_DIRS)
    for path in hidden:
        if os.path.isdir(path):
            _check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
                              b"size=4096,mode=0555"), f"mount an empty folder over {path}")
    init = _fork_init(libc)
    drop_capabilities(libc)
    return init


def _python_dirs() -> list[str]:
    """Where the Python installation, its packages and the kata package lie: they stay visible."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
             os.path.dirname(os.path.dirname(os.path.realpath(__file__)))}
    paths |= set(sysconfig.get_paths().values())
    return sorted({os.path.realpath(p) for p in paths if p})


PYTHON_DIRS = _python_dirs()  # found once, where this module is imported (the judge, a zygote), before any fork


def read_only(libc: ctypes.CDLL, mountinfo: str) -> None:
    """Every mount read-only, keeping the flags the kernel locked on it (a remount must not clear them)."""
    for point, options in _mounts(mountinfo):
        if point.startswith(("/proc", "/sys")) or "ro" in options:
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for option, flag in _MOUNT_FLAGS.items():
            if option in options:
                flags |= flag
        if libc.mount(None, point.encode(), None, flags, None) != 0 and os.path.exists(point):
            errno = ctypes.get_errno()
            raise WallError(errno, f"remount {point} read-only: {os.strerror(errno)}")


def _mounts(mountinfo: str) -> list[tuple[str, set[str]]]:
    found = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 5:
            found.append((_unescape(fields[4]), set(fields[5].split(","))))
    return found


def _unescape(point: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), point)


def fresh_tmpfs(libc: ctypes.CDLL, target: str, size: int, mountinfo: str, keep: list[str]) -> None:
    """An empty tmpfs of `size` bytes on `target`. What was mounted under it, and the `keep` paths under it
    (the Python installation, say, in a temporary folder), are shown again in the same places, read-only,
    bound from the old tree."""
    prefix = target.rstrip("/") + "/"
    inner = [p[len(prefix):] for p, _ in _mounts(mountinfo) if p.startswith(prefix)]
    inner += [p[len(prefix):] for p in keep if p.startswith(prefix)]
    outermost = sorted({p for p in inner if not any(p.startswith(q + "/") for q in inner)})
    old = os.open(target, os.O_PATH | os.O_DIRECTORY)  # the old tree stays reachable through it
    try:
        _check(libc.mount(b"tmpfs", target.encode(), b"tmpfs", MS_NOSUID | MS_NODEV,
                          f"size={size},mode=1777".encode()), f"mount tmpfs {target}")
        for relative in outermost:
            source, place = f"/proc/self/fd/{old}/{relative}", Path(target, relative)
            if not os.path.exists(source):
                continue
            place.parent.mkdir(parents=True, exist_ok=True)
            place.mkdir() if os.path.isdir(source) else place.touch()
            _check(libc.mount(source.encode(), str(place).encode(), None, MS_BIND | MS_REC, None),
                   f"mount --rbind {target}/{relative}")
            libc.mount(None, str(place).encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    finally:
        os.close(old)


def _fork_init(libc: ctypes.CDLL) -> int:
    """Fork the PID namespace's init, which forks the process that returns (PID 2) with the init's pid as
    seen from outside (the process above the init tells it through a pipe). The init mounts a /proc of the
    namespace, reaps what ends, passes the signal that asks for the stack on to PID 2, and exits as PID 2 did:
    its status, or 128 + the signal that killed it. Each process dies with its parent, and the one above the
    init exits likewise. Neither of those two ever returns, whatever fails in it."""
    told, tell = os.pipe()
    inherited = _open_descriptors() - {0, 1, 2}  # listed now: the init's /proc will not show the process above
    init = os.fork()
    if init:
        try:
            os.write(tell, str(init).encode())
            for fd in inherited:  # the socket too: the judge sees its end close with the server
                with contextlib.suppress(OSError):
                    os.close(fd)
            _wait_and_exit(init)
        finally:
            os._exit(1)
    try:
        os.close(tell)
        _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
        # A /proc of this PID namespace: the processes above are not even listed. (Refused inside bubblewrap,
        # whose /proc has parts covered; those processes are out of reach anyway: undumpable, another namespace.)
        libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        server = os.fork()
    except BaseException:
        os._exit(1)
    if server == 0:
        _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
        with os.fdopen(told, "rb") as pipe:
            return int(pipe.read() or b"0")
    try:
        signal.signal(signal.SIGUSR1, lambda *_: os.kill(server, signal.SIGUSR1))
        for fd in inherited | {told}:
            with contextlib.suppress(OSError):
                os.close(fd)
        _wait_and_exit(server)
    finally:
        os._exit(1)


def _wait_and_exit(child: int) -> None:
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(1)
        if pid == child:
            os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status))


def drop_capabilities(libc: ctypes.CDLL) -> None:
    """No capability, even in its own user namespace, and none to be gained by exec."""
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    _check(libc.capset(ctypes.byref(Header(_CAPABILITY_VERSION_3, 0)), (Data * 2)()), "capset")


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def limit_memory(megabytes: int) -> None:
    """Make allocations past `megabytes` MiB fail (Linux: RLIMIT_DATA, the memory the process writes, not
    address space merely reserved) or end the process (elsewhere, a watchdog on the peak resident size)."""
    limit = megabytes * 1024 * 1024
    if sys.platform.startswith("linux"):
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
        return
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB elsewhere

    def watch() -> None:
        while True:
            if resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale > limit:
                os.write(2, b"kata: the student's process went over its memory limit\n")
                os._exit(MEMORY_EXIT_CODE)
            time.sleep(0.1)

    threading.Thread(target=watch, name="kata-memory-watchdog", daemon=True).start()


def limit_threads() -> int:
    """Size torch's intra-op pool from OMP_NUM_THREADS; returns the number of threads torch uses."""
    import torch

    wanted = os.environ.get("OMP_NUM_THREADS", "")
    if wanted.isdigit() and int(wanted) > 0 and torch.get_num_threads() != int(wanted):
        torch.set_num_threads(int(wanted))
    return torch.get_num_threads()
