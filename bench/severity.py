"""What planted mistakes cost: each one graded as `kata verify` grades it (the reference solution with the
mistake appended), its points of the kata's, and the critical checks it failed (those that cap the score:
see "How points are weighed" in docs/authors.md) with the points the passed checks are worth.

    python bench/severity.py 9.7 [9.2 ...] [--only causal_mask_diagonal_blocked ...] [--cpu-only]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from kata.course import load_course
from kata.runner import run_kata
from kata.verify import with_mistake


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("katas", nargs="+")
    parser.add_argument("--only", nargs="*", default=None, help="mistakes' file stems to grade (default: all)")
    parser.add_argument("--cpu-only", action="store_true", help="grade on the CPU only")
    args = parser.parse_args()
    course = load_course()
    for kata_id in args.katas:
        kata = course.find(kata_id)
        solution = kata.solution.read_text(encoding="utf-8")
        mistakes = sorted(kata.mistakes_dir.glob("*.py"))
        if args.only is not None:
            mistakes = [m for m in mistakes if m.stem in args.only]
        with tempfile.TemporaryDirectory() as tmp:
            for path in mistakes:
                student = Path(tmp) / "exercise.py"
                student.write_text(with_mistake(solution, path.read_text(encoding="utf-8"), path.name),
                                   encoding="utf-8")
                result = run_kata(course, kata, student, devices="cpu" if args.cpu_only else "all")
                failed = sum(not c.passed for c in result.checks)
                capped = getattr(result, "critical_failed", None)
                # Without the cap: what the passed checks are worth (the points before critical checks existed).
                why = f"  critical failed: {', '.join(capped)}" if capped else ""
                if result.capped_off > 0:
                    why += f" (capped from {result.points + result.capped_off:.2f})"
                print(f"{kata.id} {path.stem:40s} {result.points:6.2f} of {result.max_points:g}"
                      f"  ({result.outcome}, {failed} of {len(result.checks)} checks failed){why}", flush=True)


if __name__ == "__main__":
    main()
