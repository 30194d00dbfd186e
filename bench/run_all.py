"""Every benchmark of the course, one after the other, each printing its figures beside its baseline:

1. bench/check_latency.py      `kata check 9.1` against `python -c "import torch"` (median of 7, ratio)
2. bench/verify_course.py      `kata verify` of the whole course against one `kata check` of each kata
3. bench/capstone.py           the 9.10 capstone: time to 0.95 accuracy, reference against torch's layers
4. bench/grade_vs_nbgrader.py  `kata grade --jobs 1/2`, warm pool and cold, against `nbgrader autograde`
5. bench/grade_cost.py         CPU seconds per unit of `kata grade`, warm pool and cold, against `import torch`;
                               a class's CPU-hours
6. bench/capstone_tasks.py     the capstone tasks side by side (copy, the baseline; reverse), with and
                               without a planted padding-mask mistake
7. bench/isolation.py          a graded unit in the bubblewrap sandbox against the same without it, and
                               forked from `kata grade`'s warm pool
8. bench/pool.py               a graded unit and `kata verify 9.1 9.2`, forked from the warm pool against cold
9. bench/watch.py              `kata watch`: a save's verdict, the next process ready, CPU per save; pool against cold

    python bench/run_all.py          (764 s on a 2-core machine for 1-4, 2026-11-24, before 4 measured
                                      warm and cold)

Each script takes its own options when run alone (`--help`).
"""

from __future__ import annotations

import time

import capstone
import capstone_tasks
import check_latency
import grade_cost
import grade_vs_nbgrader
import isolation
import pool
import verify_course
import watch

BENCHMARKS = (("kata check latency", check_latency), ("kata verify, whole course", verify_course),
              ("capstone: time to 0.95", capstone), ("kata grade against nbgrader autograde", grade_vs_nbgrader),
              ("what a class costs", grade_cost), ("the capstone tasks: copy and reverse", capstone_tasks),
              ("the sandbox of a graded unit", isolation), ("the warm grading pool against cold grading", pool),
              ("kata watch with its pool against cold", watch))


def main() -> None:
    for number, (title, module) in enumerate(BENCHMARKS, start=1):
        print(f"\n== {number}. {title} ({module.__name__}.py) ==", flush=True)
        started = time.perf_counter()
        module.main([])
        print(f"({time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
