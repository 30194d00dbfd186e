"""What every command module shares (`kata.cli`, `kata.nbgrader.cli`): the usage error (exit code 2),
opening the course, and the `--json` option with its versioned output."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from pathlib import Path

import click

from kata.course import Course, CourseError, CourseNotFound, Kata, load_course
from kata.outcomes import EXIT_USAGE

JSON_SCHEMA_VERSION = 1


class UsageError(click.ClickException):
    """A usage or course error: exit code 2."""

    exit_code = EXIT_USAGE


def open_course() -> Course:
    """The course above the current folder (or at $KATA_COURSE); a UsageError naming each problem."""
    try:
        return load_course()
    except CourseNotFound as exc:
        raise UsageError(exc.problems[0]) from None
    except CourseError as exc:
        raise UsageError("course.toml is not valid:\n  " + "\n  ".join(exc.problems)) from None


def select_katas(course: Course, keys: tuple[str, ...]) -> list[Kata]:
    """The katas named in `keys` (ids or slugs, comma-separated or repeated), in course order; every kata
    when none is named."""
    wanted = [key.strip() for group in keys for key in group.split(",") if key.strip()]
    try:
        chosen = {course.find(key).id for key in wanted}
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    return [k for k in course.katas if k.id in chosen] if wanted else list(course.katas)


def emit(kind: str, payload: dict) -> None:
    """A `--json` report: one object whose `schema` is `kata.<kind>/<version>` (documented in the README)."""
    click.echo(json.dumps({"schema": f"kata.{kind}/{JSON_SCHEMA_VERSION}", **payload}, indent=2, default=str))


json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print a JSON report instead (schema in the README).")


def activation_hint(argv0: str | None = None, prefix: str | None = None) -> str | None:
    """How to make `kata` a command, when this `kata` was run by its path (`.venv/bin/kata next`, the
    README's first line) and typing `kata` would not find it; None when it would."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    if Path(argv0).stem != "kata":
        return None  # python -m kata: whoever typed that knows where kata lives
    found = shutil.which("kata")
    if found is not None and Path(found).resolve() == Path(argv0).resolve():
        return None
    env = Path(sys.prefix if prefix is None else prefix)
    with contextlib.suppress(ValueError):  # another drive, on Windows
        env = Path(os.path.relpath(env))
    if os.name == "nt":
        return f"`kata` is not a command in this terminal yet: run {env / 'Scripts' / 'activate'} first."
    return f"`kata` is not a command in this terminal yet: run `source {env / 'bin' / 'activate'}` first."
