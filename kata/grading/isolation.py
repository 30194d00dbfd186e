"""Operating-system isolation of a graded unit: bubblewrap (`bwrap`), for grading that counts.

A unit is the judge (`kata.grading.child`) and the student's process it forks. The student's process walls
itself off inside the unit (`kata.student.walls`: its own namespaces, a read-only file system, the graders
hidden, no network); `kata grade` and the nbgrader grade cells also run the whole unit in a sandbox from a
maintained tool, so that it sees nothing of the machine but what grading needs:

- a fresh mount namespace in which only what the unit needs exists: the Python installation and the
  virtual environment (read-only), the kata package, a skeleton of the course (`course.toml`, this
  kata's graders, the reference solutions of this kata and the ones before it, read-only; every other
  file of the course an empty placeholder), and the student's one file (a private copy, read-only).
  No other student, no output folder, no nbgrader folder, no home, no `.git`;
- private, size-limited tmpfs for `/tmp` and `/dev/shm` (files there are memory the process limit would
  not count: their sizes bound it), and nothing else writable: the sandbox's own root and `/dev` are
  read-only too;
- new user, network, IPC, UTS and PID namespaces (`--unshare-all`): no network, and every process the
  unit started, double-forked or in its own session, dies with it (`--die-with-parent`, and the end of the
  namespace's first process ends the namespace). Started by root, the unit runs as nobody in its user
  namespace (a user namespace may map root only with a capability the sandbox drops, and the student's
  process makes one of its own inside);
- no environment but what grading needs (no tokens of the instructor's shell).

The results come back over a pipe inherited through bwrap, written by the judge alone. A warm zygote of
`kata grade` (`kata.pool`) lives in the same sandbox. bwrap needs unprivileged user namespaces; `probe()`
says whether they work here and, if not, how to enable them (`kata doctor` shows it).
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

SUBMISSION_DIR = "/submission"  # where the student's private copy appears inside the sandbox
TMP_MB = 256  # the private /tmp
SHM_MB = 64  # the private /dev/shm (torch on the CPU needs none; processes that would share it are refused)
_NOBODY = 65534  # the uid of a sandbox started by root
_PR_SET_DUMPABLE = 4
TMPFS_MB = TMP_MB + SHM_MB  # memory the unit's files can hold, beside its own
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/nsswitch.conf",
                 "/etc/passwd", "/etc/group")
_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                "OPENBLAS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "CUDA_VISIBLE_DEVICES", "KATA_COURSE",
                "PYTEST_DISABLE_PLUGIN_AUTOLOAD")
ENABLE_USER_NAMESPACES = (
    "enable unprivileged user namespaces for bwrap. Ubuntu 24.04 (AppArmor): "
    "`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` (to keep it, put "
    "`kernel.apparmor_restrict_unprivileged_userns=0` in /etc/sysctl.d/60-kata-userns.conf), or give "
    "/usr/bin/bwrap an AppArmor profile with `userns,`; older Debian: `sudo sysctl -w "
    "kernel.unprivileged_userns_clone=1`; elsewhere check `sysctl user.max_user_namespaces` is above 0")
IN_A_POD = (
    "in a container (a Kubernetes pod), the pod needs user namespaces (`hostUsers: false`), seccomp and AppArmor "
    "profiles that allow them (`Unconfined`) and an unmasked /proc (`procMount: Unmasked`), as "
    "deploy/kubernetes/grade-job.yaml sets them")
INSTALL = "install bubblewrap: `sudo apt-get install bubblewrap` (Debian, Ubuntu), `sudo dnf install bubblewrap`"


def undumpable() -> None:
    """Make this process undumpable (Linux): a process of the same user (the student's, where it can see this
    one) can then neither trace it nor read or write its memory or descriptors through /proc. Every process
    that judges or records a grade does this before it starts the student's code."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


@dataclass(frozen=True)
class Support:
    """Whether graded units can run isolated here: the tool found, and why not if they cannot."""

    tool: str | None  # the bwrap executable
    version: str = ""
    problem: str = ""  # empty when isolation works

    @property
    def available(self) -> bool:
        return self.tool is not None and not self.problem

    def describe(self) -> str:
        if self.available:
            return f"bubblewrap {self.version}: new mount, PID and network namespaces for each graded unit"
        return self.problem


@functools.cache
def probe() -> Support:
    """Find bwrap and try it once (a sandbox that runs `true`, with the user namespace and the /proc a unit's
    has): user namespaces may be off, or /proc masked (a container's)."""
    tool = shutil.which("bwrap")
    if tool is None:
        return Support(None, problem=f"bubblewrap (bwrap) is not installed: {INSTALL}")
    try:
        version = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30).stdout.split()[-1]
        trial = subprocess.run([tool, "--unshare-all", "--unshare-user", "--die-with-parent", "--ro-bind", "/", "/",
                                "--proc", "/proc", "true"], capture_output=True, text=True, timeout=30)
    except (OSError, IndexError, subprocess.TimeoutExpired) as exc:
        return Support(tool, problem=f"{tool} does not run: {exc}")
    if trial.returncode != 0:
        why = (trial.stderr.strip().splitlines() or ["no message"])[-1]
        if "mount proc" in why:  # a container's runtime masks parts of /proc: the kernel refuses a new one
            return Support(tool, version, f"{tool} cannot make a sandbox here ({why}): /proc is masked; {IN_A_POD}")
        return Support(tool, version,
                       f"{tool} cannot make a sandbox here ({why}): {ENABLE_USER_NAMESPACES}; {IN_A_POD}")
    return Support(tool, version)


def described() -> str:
    """What the reports say of a graded unit's isolation: the sandbox, and whether its memory limit counts
    shared memory (`kata.grading.cgroup`)."""
    from kata.grading import cgroup

    memory = ("a memory cgroup per unit" if cgroup.probe().available
              else "no memory cgroup (shared memory bounded by the sandbox's /tmp and /dev/shm only)")
    return f"{probe().describe()}; {memory}"


def environment(env: dict[str, str]) -> dict[str, str]:
    """What of the grading environment goes into the sandbox: nothing of the instructor's shell but
    what grading reads, a home that is the private /tmp."""
    kept = {k: v for k, v in env.items() if k in _ENVIRONMENT}
    kept.update(HOME="/tmp", TMPDIR="/tmp")
    kept.setdefault("PATH", "/usr/bin:/bin")
    return kept


def _python_dirs() -> list[str]:
    """The Python installation and the environment, with the directories their symlinks lead to."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.realpath(sys.executable))}
    paths |= {os.path.realpath(p) for p in sysconfig.get_paths().values()}
    for path in list(paths):
        paths.add(os.path.realpath(path))
    kata_package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    paths.add(kata_package)
    # Outermost first, without duplicates nested in one another.
    kept: list[str] = []
    for path in sorted(p for p in paths if os.path.isdir(p)):
        if not any(path == k or path.startswith(k + os.sep) for k in kept):
            kept.append(path)
    return [p for p in kept if not any(p == s or p.startswith(s + os.sep) for s in ("/usr",))]


def command(course, kata, submission_dir: Path, *, graders: Path | None = None, placeholder: Path,
            warm_info_fd: int | None = None) -> list[str]:
    """The bwrap command line (up to and including `--`) for grading `kata` on the files of
    `submission_dir`, which appears as /submission. `graders` is another folder of graders (an nbgrader
    notebook's hidden tests) used instead of the kata's own; `placeholder` an empty file to stand in for
    every file of the course the unit may not see.

    `warm_info_fd`: the sandbox of a zygote (`kata.grading.zygote`). It runs as the first process of its PID
    namespace, so that bwrap writes its host pid to that descriptor."""
    support = probe()
    if not support.available:
        raise OSError(support.problem)
    uid, gid = (os.getuid(), os.getgid()) if os.getuid() != 0 else (_NOBODY, _NOBODY)
    args = [support.tool, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--unshare-user", "--uid", str(uid), "--gid", str(gid)]
    if warm_info_fd is not None:
        args += ["--as-pid-1", "--info-fd", str(warm_info_fd)]
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in _SYSTEM_FILES:
        args += ["--ro-bind-try", path, path]
    args += ["--proc", "/proc", "--dev", "/dev"]
    for device in sorted(glob.glob("/dev/nvidia*")):  # CUDA: the GPU's device files, and what its driver reads
        args += ["--dev-bind", device, device]
    if glob.glob("/dev/nvidia*"):
        args += ["--ro-bind-try", "/sys", "/sys"]
    else:
        args += ["--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
    args += ["--size", str(SHM_MB * 1024 * 1024), "--tmpfs", "/dev/shm",
             "--size", str(TMP_MB * 1024 * 1024), "--tmpfs", "/tmp",
             "--remount-ro", "/dev"]  # nothing written there outlives a unit
    for path in _python_dirs():
        if str(course.root) == path or str(course.root).startswith(path + os.sep):
            raise OSError(f"the Python environment at {path} holds the course ({course.root}): a sandbox "
                          "showing the environment would show the whole course; install kata elsewhere")
        args += ["--ro-bind", path, path]
    args += _course_skeleton(course, kata, graders, placeholder)
    args += ["--ro-bind", str(submission_dir), SUBMISSION_DIR,
             "--remount-ro", "/",  # the sandbox's own root: nothing written there outlives a unit either
             "--chdir", str(course.root), "--"]
    return args


def _course_skeleton(course, kata, graders: Path | None, placeholder: Path) -> list[str]:
    """The course as the unit sees it: course.toml, this kata's graders (or `graders`), the reference
    solutions up to this kata, every other file `load_course` asks for an empty placeholder."""
    root = course.root
    args = ["--ro-bind", str(root / "course.toml"), str(root / "course.toml")]
    position = course.index(kata)
    for index, other in enumerate(course.katas):
        for file in (other.exercise, other.readme):
            args += ["--ro-bind", str(placeholder), str(file)]
        if index <= position:
            args += ["--ro-bind", str(other.solution.parent), str(other.solution.parent)]
        else:
            args += ["--ro-bind", str(placeholder), str(other.solution)]
        if other.id == kata.id and graders is None:
            args += ["--ro-bind", str(other.graders), str(other.graders)]
        else:
            args += ["--ro-bind", str(placeholder), str(other.graders / "test_placeholder.py")]
    if graders is not None:
        args += ["--ro-bind", str(graders), str(graders)]
    return args
