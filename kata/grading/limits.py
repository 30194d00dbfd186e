"""Resource limits of the grading child: memory and threads (the time budget is the parent's).

Memory: `RLIMIT_DATA`, the memory the process can write (heap, anonymous mappings, thread stacks),
rather than `RLIMIT_AS`: address space that is only reserved (glibc's per-thread malloc arenas, 64 MiB
each, CUDA's virtual address ranges) would count against `RLIMIT_AS` without using any memory, so a
limit right for a laptop with 4 threads would fail a 32-core workstation or any CUDA run. Past the
limit an allocation fails: torch raises "can't allocate memory", Python `MemoryError`, and the plugin
reports the check as over the kata's memory limit. Importing torch writes about 250 MB. Where
`RLIMIT_DATA` is not enforced (macOS), a watchdog thread samples the peak resident size and ends the
child past the limit.

Threads: torch's intra-op pool is sized by `OMP_NUM_THREADS` (the runner sets it to half the cores);
`limit_threads` makes torch honour it even where the OpenMP runtime read it differently.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

MEMORY_EXIT_CODE = 86  # the watchdog's exit status: the runner reads it as "over the memory limit"


def limit_memory(megabytes: int) -> None:
    """Make allocations past `megabytes` MiB fail (Linux) or end the process (elsewhere)."""
    limit = megabytes * 1024 * 1024
    try:
        import resource
    except ImportError:  # Windows
        return
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core dump of a crashed child
    if sys.platform.startswith("linux"):
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
        return
    _start_watchdog(limit)


def _start_watchdog(limit: int) -> None:
    import resource

    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB elsewhere
    getrusage, write, exit_ = resource.getrusage, os.write, os._exit

    def watch() -> None:
        while True:
            if getrusage(resource.RUSAGE_SELF).ru_maxrss * scale > limit:
                write(2, b"kata: the grading process went over its memory limit\n")
                exit_(MEMORY_EXIT_CODE)
            time.sleep(0.1)

    threading.Thread(target=watch, name="kata-memory-watchdog", daemon=True).start()


def limit_threads() -> int:
    """Size torch's intra-op pool from OMP_NUM_THREADS; returns the number of threads torch uses."""
    import torch

    wanted = os.environ.get("OMP_NUM_THREADS", "")
    if wanted.isdigit() and int(wanted) > 0 and torch.get_num_threads() != int(wanted):
        torch.set_num_threads(int(wanted))
    return torch.get_num_threads()
