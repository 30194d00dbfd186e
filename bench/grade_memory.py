"""The memory a grading child needs, per kata: each kata's reference solution graded as the Gradescope
autograder grades it (`kata.grade.grade_kata` with the kata's memory limit lowered to what the container
leaves, `kata.gradescope.fitted`) in containers of 768 MB (Gradescope's default), then larger ones until
it gets full marks, each in a fresh process. Prints the smallest container that gives the reference full
marks and the grading child's peak resident size there, beside the floor every child pays,
`python -c "import torch"`, measured the same way in the same run.

    python bench/grade_memory.py [--katas all]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from kata.cli_shared import select_katas
from kata.course import load_course
from kata.gradescope import fitted

REPO = Path(__file__).resolve().parents[1]

PEAK = """
import resource, sys
from pathlib import Path
{body}
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
"""

GRADE = """
from kata.course import load_course
from kata.grade import Submission, grade_kata
from kata.gradescope import fitted
from kata.stubs import strip_markers
course = load_course(Path(sys.argv[1]))
kata = fitted(course.find(sys.argv[2]), int(sys.argv[4]))
folder = Path(sys.argv[3])
(folder / f"{kata.dirname}.py").write_text(strip_markers(kata.solution.read_text()))
grade = grade_kata(course, kata, Submission("reference", folder, folder))
print(grade.points == kata.points)
"""


CONTAINERS_MB = (768, 1024, 1536, 2048, 3072, 4096)


def peak_mb(body: str, *args: str) -> tuple[int, str]:
    """Peak resident MB of the largest child of a fresh Python running `body`, and what `body` printed."""
    done = subprocess.run([sys.executable, "-c", PEAK.format(body=body), *args], capture_output=True, text=True,
                          env={**os.environ, "KATA_COURSE": str(REPO)})
    if done.returncode != 0:
        sys.exit(done.stderr[-2000:])
    *printed, peak = done.stdout.split()
    return int(peak), " ".join(printed)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--katas", default="all", help="comma-separated kata ids, or 'all'")
    args = parser.parse_args(argv)
    course = load_course(REPO)
    katas = select_katas(course, () if args.katas == "all" else (args.katas,))
    floor, _ = peak_mb("import subprocess\nsubprocess.run([sys.executable, '-c', 'import torch'], check=True)")
    print(f"the reference solution graded in a container of {CONTAINERS_MB[0]} MB (Gradescope's default) or more; "
          f"`python -c 'import torch'` peaks at {floor} MB")
    for kata in katas:
        for container in CONTAINERS_MB:
            with tempfile.TemporaryDirectory(prefix="kata-bench-memory-") as tmp:
                mb, full_marks = peak_mb(GRADE, str(REPO), kata.id, tmp, str(container))
            if full_marks == "True":
                print(f"{kata.id:>5} {kata.title[:48]:<48} full marks in a {container} MB container (a limit of "
                      f"{fitted(kata, container).memory_mb} MB), peak {mb} MB")
                break
        else:
            print(f"{kata.id:>5} {kata.title[:48]:<48} not full marks even in {CONTAINERS_MB[-1]} MB")


if __name__ == "__main__":
    main()
