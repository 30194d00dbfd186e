"""The capstone tasks side by side (kata.capstone.TASKS: the copy task is the baseline): for each, with the
reference solutions, the held-out whole-sequence accuracy, the steps and the wall time of a run, median of
3 seeds; and the same runs with a planted padding-mask mistake of kata 9.9 (the encoder ignores the
source padding mask), which only the reversal task catches.

Torch threads as `kata train-demo` and `kata check` use them (half the cores). The target: every task
>= 0.95 in <= 30 s on a 2-core machine. The load average before and after is printed: on a shared
machine the wall times grow with it.

    python bench/capstone_tasks.py [--seeds 0 1 2] [--tasks copy reverse]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MISTAKE = "reversal_encoder_ignores_padding.py"  # graders/9.9-transformer/mistakes/


def pieces():
    """(the reference 9.10 module, the 9.9 Transformer with the planted mistake), on the reference pieces."""
    from kata import earlier
    from kata.course import load_course
    from kata.student_code import load_kata_file, load_reference
    from kata.verify import with_mistake

    course = load_course(REPO)
    transformer = course.find("9.9")
    folder = Path(tempfile.mkdtemp(prefix="capstone-tasks-"))
    combined = folder / "transformer_with_mistake.py"
    combined.write_text(with_mistake(transformer.solution.read_text(encoding="utf-8"),
                                     (transformer.mistakes_dir / MISTAKE).read_text(encoding="utf-8"), MISTAKE),
                        encoding="utf-8")
    with earlier.resolving(earlier.REFERENCE):
        mistaken = load_kata_file(course, transformer, combined, ("Transformer",))
    return load_reference(course, course.find("9.10")), mistaken.Transformer


def main(argv: list[str] | None = None) -> None:
    from kata.capstone import TASKS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS))
    args = parser.parse_args(argv)
    import torch

    from kata.copy_task import train_copy_task
    from kata.student_code import use_check_threads

    use_check_threads()
    ref, mistaken = pieces()
    load_before = os.getloadavg()
    started = time.perf_counter()
    print(f"seeds {args.seeds}, {torch.get_num_threads()} torch thread(s) on {os.cpu_count()} cores, torch "
          f"{torch.__version__}, load average {load_before[0]:.1f} {load_before[1]:.1f} {load_before[2]:.1f}")
    print(f"{'task':<9}{'model':<34}{'held-out acc (median)':>23}{'per seed':>22}{'steps':>16}{'s (median)':>12}"
          f"{'per seed':>20}")
    for name in args.tasks:
        task = TASKS[name]
        for label, model in (("reference", ref.Transformer), ("9.9 mistake: encoder unmasked", mistaken)):
            runs = [train_copy_task(task, Transformer=model, padding_mask=ref.padding_mask,
                                    make_optimizer=ref.make_optimizer, make_scheduler=ref.make_scheduler,
                                    train_step=ref.train_step, greedy_decode=ref.greedy_decode, seed=seed)
                    for seed in args.seeds]
            accuracy = [r.accuracy for r in runs]
            seconds = [r.seconds for r in runs]
            print(f"{name:<9}{label:<34}{statistics.median(accuracy):>23.3f}"
                  f"{' '.join(f'{a:.3f}' for a in accuracy):>22}{' '.join(str(r.steps) for r in runs):>16}"
                  f"{statistics.median(seconds):>12.1f}{' '.join(f'{s:.1f}' for s in seconds):>20}", flush=True)
    load_after = os.getloadavg()
    print(f"target: >= {TASKS[args.tasks[0]].target_accuracy} held-out; {time.perf_counter() - started:.0f} s in all; "
          f"load average after {load_after[0]:.1f} {load_after[1]:.1f} {load_after[2]:.1f}")


if __name__ == "__main__":
    main()
