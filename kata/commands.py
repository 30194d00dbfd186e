"""What every command module shares (`kata.cli`, `kata.nbgrader.cli`): the usage error (exit code 2),
opening the course, and the `--json` option with its versioned output."""

from __future__ import annotations

import json

import click

from kata import runner
from kata.course import Course, CourseError, CourseNotFound, Kata, load_course

JSON_SCHEMA_VERSION = 1


class UsageError(click.ClickException):
    """A usage or course error: exit code 2."""

    exit_code = runner.EXIT_USAGE


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
