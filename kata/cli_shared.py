"""What the command modules (`kata.cli`, `kata.nbgrader.cli`, `kata.viz.cli`) share: the usage error (exit
code 2), opening the course, choosing katas, the `--json` option with its versioned output, and `render`,
the presentation module imported on first use."""

from __future__ import annotations

import importlib
import json
import threading
from types import ModuleType

import click

from kata.course import Course, CourseError, CourseNotFound, Kata, load_course
from kata.outcomes import EXIT_USAGE, PASSED
from kata.runner import KataResult

JSON_SCHEMA_VERSION = 1
# Reports whose fields changed meaning, at their version since (docs/students.md, "JSON output", says what).
SCHEMA_VERSIONS = {"check": 2}


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


def find_kata(course: Course, key: str) -> Kata:
    """The kata an id or slug names; a UsageError listing the known ids otherwise."""
    try:
        return course.find(key)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None


def select_katas(course: Course, keys: tuple[str, ...]) -> list[Kata]:
    """The katas named in `keys` (ids or slugs, comma-separated or repeated), in course order; every kata
    when none is named."""
    wanted = [key.strip() for group in keys for key in group.split(",") if key.strip()]
    chosen = {find_kata(course, key).id for key in wanted}
    return [k for k in course.katas if k.id in chosen] if wanted else list(course.katas)


def emit(kind: str, payload: dict) -> None:
    """A `--json` report: one object whose `schema` is `kata.<kind>/<version>` (documented in docs/students.md)."""
    version = SCHEMA_VERSIONS.get(kind, JSON_SCHEMA_VERSION)
    click.echo(json.dumps({"schema": f"kata.{kind}/{version}", **payload}, indent=2, default=str))


def check_report(result: KataResult, unmet: list[Kata], *, recorded: bool, log: bool) -> dict:
    """The `kata.check/2` report of a `runner.KataResult`. Each check's `points` are the points it earned and
    its `worth` what it can earn, as in `kata grade`'s reports (version 1 gave the worth as `points`)."""
    payload = result.to_dict()
    for check in payload["checks"]:
        check["worth"] = check["points"]
        check["points"] = check["worth"] if check["status"] == PASSED else 0.0
    payload["unmet_prerequisites"] = [k.id for k in unmet]
    payload["recorded"] = recorded
    if not log:
        payload.pop("log")
    return payload


json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print a JSON report instead (schema in docs/students.md).")


class _ImportedOnFirstUse:
    """A module imported when one of its names is first used. `kata.render` brings rich, a tenth of a second
    of `kata`'s start-up that `--help`, `--json` reports and `kata check`'s grading time need not wait for."""

    def __init__(self, name: str):
        self._name = name

    def _module(self) -> ModuleType:
        return importlib.import_module(self._name)

    def __getattr__(self, attribute: str):
        return getattr(self._module(), attribute)

    def import_in_background(self) -> None:
        """Import it now in another thread (while the graders run, say), so it is ready when the report is."""
        threading.Thread(target=self._module, daemon=True).start()


render = _ImportedOnFirstUse("kata.render")
