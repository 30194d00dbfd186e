"""Isolation of graded code: the walls of the student's process, and the sandbox and cgroup of `kata grade`.

The student's process walls itself off before it runs a line of the student's code (`kata.student.walls`): on
every path, `kata check` on a student's laptop included. Inside them the student's code may do what a program
does (start processes, use its /tmp and /dev/shm), but nothing it starts can write outside its private /tmp,
reach the network, see the course's graders and reference solutions, or outlive the run. `kata grade` also
runs each unit (the judge and the student's process) in bubblewrap, with a memory cgroup.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from kata import runner
from kata.grading import cgroup, isolation
from kata.pool import Pool
from tests.conftest import CORRECT_SOFTMAX, REPO
from tests.test_cli import kata_exe

TIMEOUT = 180
WRONG = "    return torch.exp(x) / 2\n"
MARK = "kata-walls-983"  # in the name of every file the probes write and of the process they leave behind

# What each process started by the student's code tries (argv[1]: the way it was started): a file in its /tmp,
# one outside it, the network, the graders' folder; it leaves a process behind, in a session of its own.
PROBE = """import json, os, socket, subprocess, sys


def probe(route):
    found = {}
    for label, path in (("tmp", f"/tmp/{MARK}-{route}"), ("outside", f"{OUTSIDE}/{route}")):
        try:
            with open(path, "w") as f:
                f.write(route)
            found[label] = "written"
        except OSError as exc:
            found[label] = exc.strerror
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=5).close()
        found["network"] = "reached"
    except OSError as exc:
        found["network"] = exc.strerror
    found["graders"] = os.listdir(GRADERS)
    found["solutions"] = os.listdir(SOLUTIONS)
    subprocess.Popen(["sleep", "983", MARK], start_new_session=True)
    with open(f"/tmp/{MARK}-found-{route}", "w") as f:
        json.dump(found, f)


if __name__ == "__main__":
    probe(sys.argv[1])
"""

# The student's file: the probe started in every way a process starts (the last one, fork_exec from a second
# copy of `_posixsubprocess`, the way past the old in-process guard), and run in its own process; what each found
# is printed. Its softmax is correct: processes cost no points.
STARTS = """import glob, importlib.machinery, importlib.util, json, multiprocessing, os, subprocess, sys
import _posixsubprocess

import torch

with open("/tmp/probe.py", "w") as f:
    f.write(PROBE_SOURCE)
sys.path.insert(0, "/tmp")
import probe  # noqa: E402

PYTHON = sys.executable
subprocess.run([PYTHON, "/tmp/probe.py", "subprocess.run"], check=True)
os.system(f"{PYTHON} /tmp/probe.py os.system")
pid = os.fork()
if pid == 0:
    os.execv(PYTHON, [PYTHON, "/tmp/probe.py", "os.fork"])
os.waitpid(pid, 0)
started = multiprocessing.get_context("fork").Process(target=probe.probe, args=("multiprocessing",))
started.start()
started.join()
spec = importlib.util.spec_from_file_location(
    "_posixsubprocess", _posixsubprocess.__file__,
    loader=importlib.machinery.ExtensionFileLoader("_posixsubprocess", _posixsubprocess.__file__))
unwrapped = importlib.util.module_from_spec(spec)
spec.loader.exec_module(unwrapped)
args = [PYTHON.encode(), b"/tmp/probe.py", b"fork_exec"]
pid = unwrapped.fork_exec(args, [args[0]], True, (), None, None, -1, -1, -1, -1, -1, -1, *os.pipe(), False, False,
                          -1, None, None, None, -1, None, False)
os.waitpid(pid, 0)
probe.probe("in-process")
try:
    with open(f"/dev/shm/{MARK}", "wb") as f:
        f.write(b"x" * (100 << 20))
    print("shm: 100 MB")
except OSError as exc:
    print("shm:", exc.strerror)
found = {}
for path in sorted(glob.glob(f"/tmp/{MARK}-found-*")):
    with open(path) as f:
        found[path.split("-found-", 1)[1]] = json.load(f)
print(json.dumps(found))
""" + CORRECT_SOFTMAX.split("\n\n", 1)[1]
ROUTES = ("subprocess.run", "os.system", "os.fork", "multiprocessing", "fork_exec", "in-process")


def _processes(pattern: str) -> str:
    return subprocess.run(["pgrep", "-af", pattern], capture_output=True, text=True).stdout


@pytest.mark.skipif(sys.platform != "linux", reason="the walls of the student's process are Linux's")
@pytest.mark.parametrize("pooled", [False, True], ids=["cold", "pooled"])
def test_processes_the_students_code_starts_stay_inside_its_walls(course_outside_tmp, pooled):
    """Started by any means (or the student's process itself), a process may write in its private /tmp only, finds
    no network, sees the graders' and solutions' folders empty, and is gone with the run; the correct softmax
    beside them gets full marks."""
    course = course_outside_tmp
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    outside = Path(tempfile.mkdtemp(prefix=f"{MARK}-", dir="/var/tmp"))  # a folder it could see, if not write
    probe = (PROBE.replace("OUTSIDE", repr(str(outside))).replace("PORT", str(server.getsockname()[1]))
             .replace("GRADERS", repr(str(course.root / "graders"))).replace("SOLUTIONS",
                                                                          repr(str(course.root / "solutions")))
             .replace("MARK", repr(MARK)))
    path = course.root / "exercises" / "9.1-softmax" / "exercise.py"
    path.write_text(STARTS.replace("PROBE_SOURCE", repr(probe)).replace("MARK", repr(MARK)))
    try:
        with Pool(course, 1) if pooled else contextlib.nullcontext() as pool:
            result = runner.run_kata(course, course.find("9.1"), path, timeout=TIMEOUT, pool=pool)
        assert result.outcome == runner.PASSED and result.points == result.max_points, (
            result.outcome, result.message, result.output[-2000:], result.log[-2000:])
        assert result.walls.get("namespaces"), result.walls
        lines = result.output.splitlines()
        assert "shm: No space left on device" in lines  # its /dev/shm: private, and small
        found = json.loads(next(line for line in lines if line.startswith("{")))
        assert sorted(found) == sorted(ROUTES), found
        for route in ROUTES:
            assert found[route] == {"tmp": "written", "outside": "Read-only file system", "network":
                                    "Network is unreachable", "graders": [], "solutions": []}, route
        server.setblocking(False)
        with pytest.raises(BlockingIOError):
            server.accept()
        assert list(outside.iterdir()) == []
        assert not [p for p in Path("/tmp").iterdir() if p.name.startswith(MARK)]
        assert not os.path.exists(f"/dev/shm/{MARK}")
        deadline = time.monotonic() + 10  # the kernel ends the namespace's processes as its init ends
        while left := _processes(f"sleep 983 {MARK}"):
            assert time.monotonic() < deadline, f"processes started by the student's code outlived the run:\n{left}"
            time.sleep(0.2)
    finally:
        server.close()
        shutil.rmtree(outside)


# ---------------------------------------------------------------------------------------------------------
# The operating-system wall of `kata grade` (bubblewrap), on its own: no walls of the student's process inside,
# so what it stops is what it stops.


def _sandboxed(course, script: str, tmp_path, group: cgroup.UnitGroup | None = None) -> subprocess.CompletedProcess:
    """Run a plain Python script in the sandbox a graded unit of kata 9.1 gets (no in-process guard),
    in the memory cgroup `group` if one is given."""
    submission = tmp_path / "submission"
    submission.mkdir(exist_ok=True)
    (submission / "script.py").write_text(script)
    placeholder = tmp_path / "placeholder"
    placeholder.touch()
    wrapper = isolation.command(course, course.find("9.1"), submission, placeholder=placeholder)
    if group is not None:
        wrapper = [*group.enter(), *wrapper]
    return subprocess.run([*wrapper, sys.executable, "/submission/script.py"], capture_output=True, text=True,
                          timeout=120, env=isolation.environment(dict(os.environ)))


def test_every_process_a_unit_started_dies_with_it(course, tmp_path):
    script = ("import os, subprocess, time\n"
              "if os.fork() == 0:\n"  # a double fork: the grandchild is nobody's child
              "    if os.fork() == 0:\n"
              "        os.execvp('sleep', ['sleep', '971'])\n"
              "    os._exit(0)\n"
              "subprocess.Popen(['setsid', 'sleep', '972'], start_new_session=True)\n"
              "subprocess.Popen(['sh', '-c', 'nohup sleep 973 >/dev/null 2>&1 &'])\n"
              "time.sleep(1)\n"
              "print(len([p for p in os.listdir('/proc') if p.isdigit()]))\n")
    done = _sandboxed(course, script, tmp_path)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 4  # the sleeps were running, in the unit's own PID namespace
    time.sleep(0.5)
    assert _processes("sleep 97[123]") == ""


def test_a_unit_sees_no_network_no_course_no_home_and_little_shared_memory(course, course_root, tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    (course_root / "exercises" / "9.2-layer-norm" / "exercise.py").write_text("# another student's work")
    script = (
        "import os, socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n"
        "    print('network: reached')\n"
        "except OSError as exc:\n"
        "    print('network: refused')\n"
        f"print('exercise:', repr(open({str(course_root / 'exercises/9.2-layer-norm/exercise.py')!r}).read()))\n"
        f"print('git:', os.path.exists({str(course_root / '.git')!r}), 'tests:',"
        f" os.path.exists({str(REPO / 'tests')!r}))\n"
        f"print('home:', os.path.exists({os.path.expanduser('~/.bashrc')!r}))\n"
        f"print('later solution:', repr(open({str(course.find('9.3').solution)!r}).read()))\n"
        "try:\n"
        "    with open('/dev/shm/big', 'wb') as f:\n"
        "        f.write(b'x' * (200 << 20))\n"
        "    print('shm: 200 MB')\n"
        "except OSError as exc:\n"
        "    print('shm: full')\n")
    try:
        done = _sandboxed(course, script, tmp_path)
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["network: refused", "exercise: ''", "git: False tests: False",
                                        "home: False", "later solution: ''", "shm: full"]
    assert not os.path.exists("/dev/shm/big")


# ---------------------------------------------------------------------------------------------------------
# The memory cgroup of a graded unit: a limit that counts shared memory


def _memory_cgroup() -> cgroup.Place:
    """Where this machine makes units' cgroups. As root on Linux there is one (CI runs as root); a user
    without a delegated cgroup has none, and `kata doctor` says so (tested below)."""
    if os.geteuid() != 0:
        pytest.skip("memory cgroups for graded units need root or a delegated cgroup (CI runs as root)")
    support = cgroup.probe()
    assert support.available, support.problem
    return support.place


# Anonymous shared memory, as any code of the student's may make it: RLIMIT_DATA does not count it. MB
# (environment) megabytes are written, 64 at a time.
SHARED_MEMORY_SCRIPT = ("import os\n"
                        "fd = os.memfd_create('kata-unit')\n"
                        "for _ in range(int(os.environ['MB']) // 64):\n"
                        "    os.write(fd, b'x' * (64 << 20))\n"
                        "print('written', flush=True)\n")


@pytest.mark.parametrize("megabytes, killed", [(128, False), (1024, True)])
def test_shared_memory_counts_against_a_units_cgroup(course, tmp_path, monkeypatch, megabytes, killed):
    place = _memory_cgroup()
    monkeypatch.setitem(os.environ, "MB", str(megabytes))
    monkeypatch.setattr(isolation, "_ENVIRONMENT", (*isolation._ENVIRONMENT, "MB"))
    with cgroup.unit(place, 384 << 20) as group:
        done = _sandboxed(course, SHARED_MEMORY_SCRIPT, tmp_path, group)
        assert (done.returncode != 0, group.oom_killed()) == (killed, killed), (done.returncode, done.stderr)
        assert (done.stdout == "written\n") is not killed
        assert group.path.is_dir()
    assert not group.path.exists()  # removed with the unit


def test_a_unit_past_its_cgroup_limit_is_over_the_memory_limit(course, softmax_file, monkeypatch):
    # Grading, as `kata grade` does it, with the cgroup's limit below what importing torch takes: the kernel
    # ends the unit, and the result says the kata's memory limit, not a crash.
    _memory_cgroup()
    monkeypatch.setattr(cgroup, "limit_bytes", lambda memory_mb, tmpfs_mb: 96 << 20)
    result = runner.run_kata(course, course.find("9.1"), softmax_file(CORRECT_SOFTMAX), isolate=True,
                             timeout=TIMEOUT)
    assert (result.outcome, result.points, result.exit_code) == (runner.MEMORY, 0, 4), result.message
    assert result.message.startswith("used more memory than the kata's limit")
    # With the real limit the same file passes in the same cgroup mechanism.
    monkeypatch.undo()
    passed = runner.run_kata(course, course.find("9.1"), softmax_file(CORRECT_SOFTMAX), isolate=True,
                             timeout=TIMEOUT)
    assert passed.outcome == runner.PASSED, passed.message


V1_MOUNTS = ("35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
             "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n")
V2_MOUNTS = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"


@pytest.mark.parametrize("proc_cgroup, mountinfo, expected", [
    # Hybrid (Debian 10, containers of this kind): v2 holds no controller here, so v1 is tried last.
    ("4:memory:/process_api/e09f\n1:cpu:/\n0::/\n", V1_MOUNTS,
     [(2, "/sys/fs/cgroup/unified", True), (1, "/sys/fs/cgroup/memory/process_api/e09f", False)]),
    # cgroup v2 (Ubuntu, Fedora): beside the own cgroup, then inside it when it is delegated.
    ("0::/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope\n", V2_MOUNTS,
     [(2, "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice", False),
      (2, "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope", True)]),
    # A container whose cgroup mount shows only its own subtree.
    ("0::/kubepods/pod1/c1\n", "30 23 0:26 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
     [(2, "/sys/fs/cgroup", False), (2, "/sys/fs/cgroup/c1", True)]),
    # No cgroup file system mounted.
    ("0::/\n", "22 1 0:21 / /proc rw - proc proc rw\n", []),
])
def test_where_units_cgroups_can_go(proc_cgroup, mountinfo, expected):
    found = cgroup.candidates(proc_cgroup, mountinfo)
    assert [(p.version, str(p.parent), p.move_self) for p in found] == expected


# ---------------------------------------------------------------------------------------------------------
# A class of forgers beside honest students, graded by the real `kata grade`


def _tree(folder) -> dict[str, str]:
    """Every file under `folder` (links as links), by relative path: its SHA-256."""
    import hashlib

    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            found[str(path.relative_to(folder))] = "link:" + os.readlink(path)
        elif path.is_file():
            found[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


NOTHING = "    raise NotImplementedError\n"  # what a forger earns when the forgery fails: exactly 0
ATTEMPTS = ("import json, os, pathlib, torch\n\n\ndef attempt(f):\n    try:\n        f()\n    except Exception:\n"
            "        pass\n\n\n")


def forgers(course_root, folder, out, home) -> dict[str, str]:
    """The student files of the audit's attacks that `kata grade` could meet: (name, source of 9.1). The
    instructor's files they aim at are stand-ins under the test's folder (the course is a clone, with its
    .ci and .git; `home` the instructor's home), so that a broken sandbox spoils no real file."""
    forged = {"student": "alice", "kata": "9.1", "outcome": "failed", "points": 0.0, "max_points": 10.0,
              "graders": "", "sha256": ""}
    writes = [course_root / "course.toml", course_root / ".ci" / "run",
              course_root / ".git" / "hooks" / "post-checkout", home / ".bashrc", out / "grades.csv",
              folder / "alice" / "9.1-softmax.py"]
    return {
        "doublefork": ATTEMPTS + "if os.fork() == 0:\n    if os.fork() == 0:\n"
                                 "        os.execvp('sleep', ['sleep', '975'])\n"
                                 "    os._exit(0)\n\n\ndef softmax(x, dim=-1):\n" + NOTHING,
        "socket": ATTEMPTS + "import socket\n\n\ndef softmax(x, dim=-1):\n"
                             "    socket.create_connection(('127.0.0.1', 9), timeout=1)\n" + NOTHING,
        # 4: forged journal lines (another student to 0, this one to full marks)
        "journal": ATTEMPTS + "".join(
            f"attempt(lambda: open({str(out / 'results.jsonl')!r}, 'a').write(json.dumps({line!r}) + '\\n'))\n"
            for line in (forged, {**forged, "student": "journal", "outcome": "passed", "points": 10.0}))
            + "\n\ndef softmax(x, dim=-1):\n" + NOTHING,
        # 6: writes outside the graders and solutions
        "writer": ATTEMPTS + "".join(f"attempt(lambda: open({str(p)!r}, 'a').write('\\necho forged\\n'))\n"
                                     for p in writes) + "\n\ndef softmax(x, dim=-1):\n" + NOTHING,
        # reading another student's file (a correct softmax when it could) and the reference solution by path
        "reader": ATTEMPTS + "SOURCES = []\nattempt(lambda: SOURCES.append(open("
                  f"{str(folder / 'alice' / '9.1-softmax.py')!r}).read()))\n"
                  + CORRECT_SOFTMAX.split("\n\n", 1)[1].replace("    e = ",
                                                                f"    if not SOURCES:\n    {NOTHING}    e = "),
        "ref-reader": ATTEMPTS + f"SOURCE = open({str(course_root / 'solutions' / '9.1-softmax' / 'solution.py')!r})"
                      ".read()\n\n\ndef softmax(x, dim=-1):\n" + NOTHING,
        # 8: a /dev/shm file past the memory limit
        "shm": ATTEMPTS + "def softmax(x, dim=-1):\n"
                          "    with open('/dev/shm/kata-forger', 'wb') as f:\n"
                          "        f.truncate(5 << 30)\n" + NOTHING,
        # 8: anonymous shared memory past the memory limit (RLIMIT_DATA does not count it; the unit's memory
        # cgroup does)
        "memfd": ATTEMPTS + "def softmax(x, dim=-1):\n"
                            "    fd = os.memfd_create('kata-forger')\n"
                            "    for _ in range(80):\n"
                            "        os.write(fd, b'x' * (64 << 20))\n" + NOTHING,
    }


def memfd_held(grade: dict) -> bool:
    """The memfd forger got nothing, and was stopped by a limit: its unit's memory cgroup (the kernel ends the unit,
    or its process) or, where writing gigabytes takes longer than that, the time budget."""
    return grade["points"] == 0 and grade["outcome"] in (runner.MEMORY, runner.CRASH, runner.TIMEOUT) and (
        grade["outcome"] != runner.CRASH or "killed by SIGKILL" in grade["message"])


def test_a_class_of_forgers_gets_zero_beside_full_marks(tmp_path):
    import shutil

    from kata.course import load_course
    from kata.stubs import strip_markers
    from tests.conftest import copy_course

    course_root = copy_course(tmp_path / "course")
    shutil.copytree(REPO / ".ci", course_root / ".ci")
    (course_root / ".git" / "hooks").mkdir(parents=True)
    (course_root / ".git" / "hooks" / "post-checkout.sample").write_text("#!/bin/sh\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("export PATH\n")
    reference = strip_markers(load_course(course_root).find("9.1").solution.read_text())
    folder, out = tmp_path / "class", tmp_path / "class-grades"
    honest = ("alice", "zoe")
    for name in honest:
        (folder / name).mkdir(parents=True)
        (folder / name / "9.1-softmax.py").write_text(reference)
    for name, source in forgers(course_root, folder, out, home).items():
        (folder / name).mkdir()
        (folder / name / "9.1-softmax.py").write_text(source)
    # 5: symbolic links out of the submission: to the reference, to another student's file and folder
    (folder / "linker").mkdir()
    (folder / "linker" / "9.1-softmax.py").symlink_to(course_root / "solutions" / "9.1-softmax" / "solution.py")
    (folder / "copier").mkdir()
    (folder / "copier" / "9.1-softmax.py").symlink_to(folder / "alice" / "9.1-softmax.py")
    (folder / "folder-linker" / "exercises").mkdir(parents=True)
    shutil.copytree(folder / "alice", folder / "zoe-clone")  # a folder the next one links to
    (folder / "folder-linker" / "exercises" / "9.1-softmax").symlink_to(folder / "zoe-clone")
    (folder / "zoe-clone" / "exercise.py").write_text(reference)
    (folder / "whole-linker").symlink_to(folder / "alice")
    # hard links are read as copies: graded as what they hold
    (folder / "hardlinker").mkdir()
    os.link(folder / "alice" / "9.1-softmax.py", folder / "hardlinker" / "9.1-softmax.py")

    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "KATA_COURSE": str(course_root), "KATA_PROGRESS": str(tmp_path / "progress.json"),
           "TMPDIR": str(tmp_path / "tmp"), "HOME": str(home)}
    watched = {"course": (course_root, _tree(course_root)), "class": (folder, _tree(folder)),
               "home": (home, _tree(home))}

    def grade() -> dict:
        done = subprocess.run([kata_exe(), "grade", str(folder), "--katas", "9.1", "--jobs", "2", "--json"],
                              capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        return {s["student"]: s["katas"][0] for s in json.loads(done.stdout)["students"]}

    grades = grade()
    # Each forger's attempt fails inside the walls (or is harmless there), and what is left is 9.1's stub.
    expected = {"alice": ("passed", 10), "zoe": ("passed", 10), "zoe-clone": ("passed", 10),
                "hardlinker": ("passed", 10), "doublefork": ("not-implemented", 0),
                "socket": ("failed", 0), "journal": ("not-implemented", 0), "writer": ("not-implemented", 0),
                "reader": ("not-implemented", 0), "ref-reader": ("exception", 0), "shm": ("not-implemented", 0),
                "linker": ("not-a-regular-file", 0), "copier": ("not-a-regular-file", 0),
                "folder-linker": ("not-a-regular-file", 0), "whole-linker": ("unreadable", 0)}
    assert {s: (g["outcome"], g["points"]) for s, g in grades.items() if s != "memfd"} == expected
    assert memfd_held(grades["memfd"])
    assert "symbolic link" in grades["linker"]["message"] and "symbolic link" in grades["whole-linker"]["message"]
    assert "FileNotFoundError" in grades["ref-reader"]["message"]  # the reference: hidden from the student's process
    # Every unit in bubblewrap, with a memory cgroup (as root), and each student's process that ran in walls of its own.
    walls = runner.describe_walls({"user": "same", "namespaces": True})
    ran = {s: g for s, g in grades.items() if g["outcome"] not in ("not-a-regular-file", "unreadable")}
    assert all(g["isolation"].startswith("bubblewrap") for g in grades.values())
    assert all(g["isolation"].endswith(f"; {walls}") for g in ran.values()), {s: g["isolation"] for s, g in ran.items()}
    assert all("; a memory cgroup per unit" in g["isolation"] for g in grades.values()) or os.geteuid() != 0
    with open(out / "checks.csv", newline="") as f:
        forged = [row for row in csv.DictReader(f) if expected.get(row["student"], ("", 0))[1] == 0]
    assert forged and all(row["points"] == "0" for row in forged)

    # Nothing outside the reports changed: not the course (its .ci, its .git), the class, the home.
    for name, (where, before) in watched.items():
        assert _tree(where) == before, name
    assert sorted(p.name for p in out.iterdir()) == [".kata-grade.key", ".kata-grade.lock", "checks.csv", "feedback",
                                                      "grades.csv", "grades.json", "katas.csv", "results.jsonl"]
    feedback = sorted(p.name for p in (out / "feedback").iterdir())
    assert feedback == sorted(f"{s}.{x}" for s in grades for x in ("md", "html"))
    assert not os.path.exists("/dev/shm/kata-forger")
    assert _processes("sleep 975") == "" and _processes(str(tmp_path)) == ""

    # 4: lines forged into the journal by hand are rejected and their units graded again
    journal = out / "results.jsonl"
    lines = journal.read_text().splitlines()
    for student, points in (("alice", 0.0), ("journal", 10.0)):
        line = next(json.loads(x.rpartition("\t")[0]) for x in lines if x.startswith(f'{{"student": "{student}"'))
        line.update(points=points, outcome="passed" if points else "failed")
        with open(journal, "a") as f:
            f.write(json.dumps(line) + "\t" + "0" * 64 + "\n")
    again = grade()
    assert {s: (g["outcome"], g["points"]) for s, g in again.items() if s != "memfd"} == expected
    assert memfd_held(again["memfd"])


def test_verify_progress_says_a_hash_proves_identity_and_regrade_proves_the_pass(course_root):
    # A pass written by hand with the right SHA-256 of a file that does not pass.
    from click.testing import CliRunner

    from kata.cli import main
    from kata.progress import file_hash

    exercise = course_root / "exercises" / "9.1-softmax" / "exercise.py"
    exercise.write_text("import torch\n\n\ndef softmax(x, dim=-1):\n" + WRONG)
    (course_root / ".kata-progress.json").write_text(json.dumps({"schema": 1, "katas": {
        "9.1": {"status": "passed", "attempts": 1, "passed_hash": file_hash(exercise)}}}))
    identity = CliRunner().invoke(main, ["verify", "--progress", "9.1"], terminal_width=300)
    assert identity.exit_code == 0 and "identity only" in identity.output and "--regrade" in identity.output
    assert json.loads(CliRunner().invoke(main, ["verify", "--progress", "9.1", "--json"]).output)["proves"] == \
        "identity"
    regraded = CliRunner().invoke(main, ["verify", "--progress", "9.1", "--regrade", "--json"])
    assert regraded.exit_code == 1 and json.loads(regraded.output)["katas"][0]["verdict"] == "regraded-failing"


def test_without_a_sandbox_kata_grade_refuses_unless_told_and_the_reports_say_so(tmp_path):
    from kata.course import load_course
    from kata.grade import UNSAFE
    from kata.stubs import strip_markers
    from tests.conftest import copy_course

    course_root = copy_course(tmp_path / "course")
    folder = tmp_path / "class"
    (folder / "alice").mkdir(parents=True)
    (folder / "alice" / "9.1-softmax.py").write_text(
        strip_markers(load_course(course_root).find("9.1").solution.read_text()))
    env = {**os.environ, "KATA_COURSE": str(course_root), "KATA_PROGRESS": str(tmp_path / "progress.json")}
    no_bwrap = {**env, "PATH": str(tmp_path / "no-tools")}  # where bubblewrap is not found

    def grade(*args, env):
        return subprocess.run([kata_exe(), "grade", str(folder), "--katas", "9.1", *args], capture_output=True,
                              text=True, timeout=300, env=env)

    refused = grade(env=no_bwrap)
    assert refused.returncode == 2 and "needs an operating-system sandbox" in refused.stderr
    assert "bubblewrap (bwrap) is not installed" in refused.stderr and "--unsafe-no-sandbox" in refused.stderr
    assert not (tmp_path / "class-grades" / "results.jsonl").exists()

    unsafe = grade("--unsafe-no-sandbox", "--json", env=no_bwrap)
    assert unsafe.returncode == 0, unsafe.stderr[-2000:]
    report = json.loads(unsafe.stdout)
    assert report["isolation"] == UNSAFE and report["students"][0]["total"] == 10
    with open(tmp_path / "class-grades" / "katas.csv", newline="") as f:  # the student's process still walled
        assert [row["isolation"] for row in csv.DictReader(f)] == [
            f"{UNSAFE}; {runner.describe_walls({'user': 'same', 'namespaces': True})}"]

    # With the sandbox back, what was graded without it is graded again.
    again = json.loads(grade("--json", env=env).stdout)
    assert (again["graded"], again["reused"]) == (1, 0) and again["isolation"].startswith("bubblewrap")


def test_kata_doctor_says_which_isolation_there_is(tmp_path):
    env = {**os.environ, "KATA_COURSE": str(REPO)}
    restricted = tmp_path / "restricted"  # a bwrap that user namespaces are refused to (Ubuntu 24.04's AppArmor)
    restricted.mkdir()
    (restricted / "bwrap").write_text('#!/bin/sh\n[ "$1" = --version ] && echo "bubblewrap 0.9.0" && exit 0\n'
                                      'echo "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n')
    (restricted / "bwrap").chmod(0o755)
    rows, memory, warm = {}, {}, {}
    for label, path, pool in (("here", env["PATH"], "1"), ("without bwrap", str(tmp_path), "1"),
                              ("restricted", str(restricted), "1"), ("no pool", env["PATH"], "0")):
        done = subprocess.run([kata_exe(), "doctor", "--json"], capture_output=True, text=True, timeout=300,
                              env={**env, "PATH": path, "KATA_POOL": pool})
        checks = {c["name"]: c["value"] for c in json.loads(done.stdout)["checks"]}
        rows[label], memory[label] = checks["isolation (kata grade)"], checks["memory limit (kata grade)"]
        warm[label] = checks["warm pool (kata grade)"]
    if os.geteuid() == 0:  # CI: root has memory cgroups for graded units, and so a warm pool for kata grade
        assert memory["here"].startswith("a memory cgroup (v") and "shared memory counts" in memory["here"]
        assert warm["here"].startswith("each unit forked from a zygote in its kata's sandbox")
    else:
        assert "systemd-run --user --scope -p Delegate=yes" in memory["here"]
        assert warm["here"] == "none, units start cold: no memory cgroup per unit (see above)"
    assert warm["no pool"] == "none, units start cold: KATA_POOL=0"
    assert warm["restricted"].startswith("none, units start cold: no ")
    assert rows["here"].startswith("bubblewrap ") and "PID and network namespaces" in rows["here"]
    assert "not installed" in rows["without bwrap"] and "apt-get install bubblewrap" in rows["without bwrap"]
    assert "uid map: Permission denied" in rows["restricted"]
    assert "kernel.apparmor_restrict_unprivileged_userns=0" in rows["restricted"]


def test_kata_doctor_fails_where_kata_grade_would_refuse(tmp_path):
    """No bwrap on PATH: `kata grade` refuses to grade, so doctor must not say ✓ and exit 0."""
    env = {**os.environ, "KATA_COURSE": str(REPO), "PATH": str(tmp_path)}
    done = subprocess.run([kata_exe(), "doctor", "--json"], capture_output=True, text=True, timeout=300, env=env)
    report = json.loads(done.stdout)
    row = next(c for c in report["checks"] if c["name"] == "isolation (kata grade)")
    assert done.returncode == 1 and not report["ok"] and not row["ok"]
    assert "`kata grade` will refuse" in row["value"] and "sudo apt-get install bubblewrap" in row["value"]
    shown = subprocess.run([kata_exe(), "doctor"], capture_output=True, text=True, timeout=300,
                           env={**env, "COLUMNS": "300"})
    line = next(line for line in shown.stdout.splitlines() if "isolation (kata grade)" in line)
    assert shown.returncode == 1 and "✗" in line and "apt-get install bubblewrap" in line
