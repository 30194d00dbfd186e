"""Resource limits of a check: memory, wall-clock time, output, threads.

Each test grades a real file for kata 9.1 through the real judge and the student's process, which runs under
the kata's memory limit (`kata.student.walls.limit_memory`) and time budget.
"""

from __future__ import annotations

import sys

import pytest

from kata import outcomes, runner
from kata.cpus import usable_cpus
from kata.grading import protocol
from tests.conftest import CORRECT_SOFTMAX

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA is enforced on Linux")


def grade(course, path, **kwargs):
    kwargs.setdefault("timeout", 180)
    return runner.run_kata(course, course.find("9.1"), path, **kwargs)


def test_memory_limit_comes_from_course_toml(course, softmax_file):
    result = grade(course, softmax_file(CORRECT_SOFTMAX))
    assert result.outcome == runner.PASSED
    assert result.memory_mb == course.find("9.1").memory_mb == 4096


def test_a_huge_allocation_in_a_check_hits_the_memory_limit(course, softmax_file):
    waste = "    waste = torch.empty(3 * 1024 ** 3, dtype=torch.uint8)\n"
    body = CORRECT_SOFTMAX.replace("def softmax(x, dim=-1):\n", "def softmax(x, dim=-1):\n" + waste)
    result = grade(course, softmax_file(body), memory_mb=2048)
    assert result.outcome == runner.MEMORY and result.exit_code == outcomes.EXIT_CRASH
    assert "used more than 2 GiB of memory, the kata's limit" in result.message
    assert {c.status for c in result.checks} == {protocol.MEMORY}
    assert result.checks[0].frames[-1].line == 5  # the student's line that allocated


def test_memory_growing_in_a_loop_hits_the_limit(course, softmax_file):
    body = ("import torch\n\nKEEP = []\n\ndef softmax(x, dim=-1):\n"
            "    while True:\n        KEEP.append(torch.ones(64 * 1024 ** 2, dtype=torch.uint8))\n")
    result = grade(course, softmax_file(body), memory_mb=1536)
    assert result.outcome == runner.MEMORY
    assert "used more than 1.5 GiB of memory" in result.message


def test_memory_limit_at_import(course, softmax_file):
    body = "import torch\nTABLE = torch.zeros(2 * 1024 ** 3, dtype=torch.uint8)\n" + CORRECT_SOFTMAX
    result = grade(course, softmax_file(body), memory_mb=1024)
    assert result.outcome == runner.MEMORY and not result.checks
    assert "used more than 1 GiB of memory" in result.message
    assert result.frames and result.frames[-1].line == 2


def test_the_limit_leaves_room_for_torch_and_the_graders(course, softmax_file):
    # Importing torch writes about 250 MB: a tight 768 MB limit still grades a correct file.
    result = grade(course, softmax_file(CORRECT_SOFTMAX), memory_mb=768)
    assert result.outcome == runner.PASSED, (result.message, result.log[-1500:])


def test_running_past_the_time_budget_is_a_timeout(course, softmax_file):
    path = softmax_file("import time\nimport torch\n\ndef softmax(x, dim=-1):\n    time.sleep(3600)\n")
    result = runner.run_kata(course, course.find("9.1"), path, timeout=8)
    assert result.outcome == runner.TIMEOUT and result.exit_code == outcomes.EXIT_TIMEOUT
    assert "ran longer than 8 s, the kata's time budget" in result.message
    assert result.seconds < 20, "the process group is killed at the budget"


def test_output_written_past_python_is_capped(course, softmax_file):
    # 50 MB straight to the file descriptors: kept is a head and a tail, nothing reaches the disk.
    body = ("import os\nos.write(1, b'A' * 25_000_000 + b'END-OF-STDOUT')\n"
            "os.write(2, b'B' * 25_000_000 + b'END-OF-STDERR')\n" + CORRECT_SOFTMAX)
    result = grade(course, softmax_file(body))
    assert result.outcome == runner.PASSED
    assert len(result.log) < runner.LOG_HEAD + runner.LOG_TAIL + 200
    assert "bytes not kept" in result.log and "END-OF-STDERR" in result.log


def test_printed_output_is_capped_per_check(course, softmax_file):
    body = CORRECT_SOFTMAX.replace("def softmax(x, dim=-1):\n", "def softmax(x, dim=-1):\n    print('x' * 100_000)\n")
    result = grade(course, softmax_file(body))
    assert result.outcome == runner.PASSED
    assert all(len(c.output) < 5000 for c in result.checks), max(len(c.output) for c in result.checks)


def test_torch_uses_the_thread_count_it_is_given(course, softmax_file, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    body = "import torch\nprint('threads', torch.get_num_threads())\n" + CORRECT_SOFTMAX
    result = grade(course, softmax_file(body))
    assert result.outcome == runner.PASSED
    assert result.threads == 1 and "threads 1" in result.output


def test_threads_default_to_half_the_cores(course, softmax_file, monkeypatch):
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    result = grade(course, softmax_file(CORRECT_SOFTMAX))
    assert result.threads == max(1, usable_cpus() // 2)


def test_the_students_code_cannot_raise_its_memory_limit(course, softmax_file):
    """The limit is a hard one, in a process without the capability to raise it: asking for more fails, and
    memory past the limit is still refused."""
    body = ("import resource\n"
            "try:\n"
            "    resource.setrlimit(resource.RLIMIT_DATA, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n"
            "except (ValueError, OSError) as exc:\n"
            "    print('refused:', exc)\n"
            "print('limit:', resource.getrlimit(resource.RLIMIT_DATA)[1] >> 20, 'MiB')\n"
            + CORRECT_SOFTMAX.replace("def softmax(x, dim=-1):\n", "def softmax(x, dim=-1):\n"
                                      "    waste = torch.empty(3 * 1024 ** 3, dtype=torch.uint8)\n"))
    result = grade(course, softmax_file(body), memory_mb=2048)
    assert result.outcome == runner.MEMORY, (result.outcome, result.message)
    assert "used more than 2 GiB of memory, the kata's limit" in result.message
    assert result.output == "refused: not allowed to raise maximum limit\nlimit: 2048 MiB\n", result.output
