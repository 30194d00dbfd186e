"""`kata new`: the files of a new kata, ready for its author to fill in.

A kata is one `[[kata]]` block in `course.toml` and four files in three trees, plus its planted
mistakes and alternatives:

    solutions/<id>-<slug>/solution.py         the reference, its solution regions marked
    exercises/<id>-<slug>/exercise.py         the stub, derived from the solution (`kata stubs`)
    exercises/<id>-<slug>/README.md           what `kata show` prints
    graders/<id>-<slug>/test_<name>.py        the graders, starting from the toolkit's shared checks
    graders/<id>-<slug>/mistakes/, alternatives/   planted mistakes (3 or more), correct variants (4 or more)

(and, if the kata draws pictures, `kata/viz/katas/<slug>.py` with a `pictures` key). What the
author still has to write is marked `TODO(kata new)`; `kata verify <id>` lists every place the marker
is left, beside what else is missing, so the new kata is done when `kata verify` says it is sound.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kata.course import _ID, _SLUG, COURSE_FILE, Course, load_course
from kata.stubs import derive_stub

TODO = "TODO(kata new)"


class ScaffoldError(ValueError):
    """The new kata cannot be made (its id or slug is taken, a file is already there)."""


@dataclass(frozen=True)
class NewKata:
    id: str
    slug: str
    title: str
    requires: tuple[str, ...] = ()

    @property
    def dirname(self) -> str:
        return f"{self.id}-{self.slug}"

    @property
    def name(self) -> str:
        """The function the kata asks for, named after the slug (a starting point)."""
        return self.slug.replace("-", "_")


def files(new: NewKata) -> dict[str, str]:
    """The new kata's files (path relative to the course -> text), the stub not yet among them."""
    return {
        f"solutions/{new.dirname}/solution.py": _SOLUTION.format(new=new, todo=TODO),
        f"exercises/{new.dirname}/README.md": _README.format(new=new, todo=TODO),
        f"graders/{new.dirname}/test_{new.name}.py": _GRADERS.format(new=new, todo=TODO),
        f"graders/{new.dirname}/mistakes/.gitkeep": "",
        f"graders/{new.dirname}/alternatives/.gitkeep": "",
    }


def course_entry(new: NewKata) -> str:
    """The kata's `[[kata]]` block, appended to course.toml (which keeps its comments)."""
    requires = ", ".join(f'"{r}"' for r in new.requires)
    return (f'\n[[kata]]\nid = "{new.id}"\nslug = "{new.slug}"\ntitle = "{new.title}"\npoints = 10\n'
            f"requires = [{requires}]\nforbidden = []\nhints = [\n"
            f'    """{TODO}: the concept, in a few sentences.""",\n'
            f'    """{TODO}: the approach, without the code.""",\n'
            f'    """{TODO}: the near-solution.""",\n]\n')


def create(course: Course, new: NewKata) -> list[Path]:
    """Write the new kata into the course; the paths written, course.toml first. Nothing is overwritten:
    a taken id or slug, or a file already there, is a ScaffoldError before anything is written."""
    problems = []
    if not _ID.match(new.id):
        problems.append(f"id {new.id!r} must look like '9.1'")
    if not _SLUG.match(new.slug):
        problems.append(f"slug {new.slug!r} must be lowercase words joined by '-'")
    if not new.title.strip() or '"' in new.title or "\\" in new.title:
        problems.append(f"title {new.title!r} must be a non-empty line without quotes or backslashes")
    for kata in course.katas:
        if kata.id == new.id or kata.slug == new.slug:
            problems.append(f"kata {kata.id} ({kata.slug}) is already in {course.file}")
    known = {k.id for k in course.katas}
    problems += [f"unknown prerequisite {r!r} (known: {', '.join(sorted(known))})"
                 for r in new.requires if r not in known]
    texts = files(new)
    stub = f"exercises/{new.dirname}/exercise.py"
    texts[stub] = derive_stub(texts[f"solutions/{new.dirname}/solution.py"])
    problems += [f"{course.root / path} is already there" for path in texts if (course.root / path).exists()]
    if problems:
        raise ScaffoldError("; ".join(problems))
    written = [course.file]
    with course.file.open("a", encoding="utf-8") as toml:
        toml.write(course_entry(new))
    for path, text in texts.items():
        target = course.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(target)
    load_course(course.root)  # the course stays valid (raises CourseError, naming the problem, if not)
    return written


def todos(course: Course, kata) -> list[str]:
    """`file:line` of every TODO(kata new) left in the kata's files and hints."""
    found = [f"{COURSE_FILE}: kata {kata.id}: hint {i}" for i, hint in enumerate(kata.hints, 1) if TODO in hint]
    paths = [kata.solution, kata.readme, *kata.grader_files(), *kata.mistakes(), *kata.alternatives()]
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if TODO in line:
                found.append(f"{path.relative_to(course.root)}:{number}")
    return found


_SOLUTION = '''"""Kata {new.id}: {new.title}.

{todo}: what the student builds and why, the formula, and the contract graders rely on: the public
names, their signatures, the shape of every argument and result, the errors raised.
"""

import torch


def {new.name}(x: torch.Tensor) -> torch.Tensor:
    """{todo}: the formula.

    Args:
        x: (batch, seq, d_model).

    Returns:
        (batch, seq, d_model), x's dtype and device.
    """
    ### BEGIN SOLUTION
    raise NotImplementedError("{todo}: the reference solution")
    ### END SOLUTION
'''

_README = '''# Kata {new.id}: {new.title}

{todo}: what the student builds, in a sentence.

## Why it is there

{todo}: where it sits in the Transformer of *Attention Is All You Need*.

## The math

{todo}: the formula, in LaTeX (`kata show` prints it as Unicode text).

## Your task

Write `{new.name}` in `exercise.py`. {todo}: the contract (names, shapes, errors).

## What the graders check

{todo}: the checks, in a list, as `kata check {new.id}` will name them.
'''

_GRADERS = '''"""Graders of kata {new.id}: {new.title}.

Hidden from students: they see each check's title and message, never this file.
"""

import pytest
import torch

from kata.toolkit import assert_close
from kata.toolkit.common import check_inputs_unchanged, check_output_like
from kata.toolkit.compare import describe

# {todo}: the kata's classic mistakes, each a Mistake named where a check recognises it, and each with a
# planted mistake in mistakes/ that shows it firing; compare with PyTorch's built-in on equal terms too.


@pytest.mark.critical  # a bug here breaks what the kata builds (kata.scoring)
def test_matches_reference(student, reference, device, dtype):
    """Matches the reference solution"""
    x = torch.randn(2, 3, 8, device=device, dtype=dtype)
    assert_close(student.{new.name}(x), reference.{new.name}(x), what="the reference solution",
                 context=f"x {{describe(x)}}")


def test_input_not_modified(student, device):
    """The input is left unchanged"""
    x = torch.randn(2, 3, 8, device=device)
    check_inputs_unchanged(lambda: student.{new.name}(x), {{"the input": x}})


def test_keeps_dtype_and_device(student, device, dtype):
    """The output keeps the input's shape, dtype and device"""
    x = torch.randn(2, 3, 8, device=device, dtype=dtype)
    check_output_like(student.{new.name}(x), x, "{new.name}")
'''
