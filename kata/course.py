"""The course model: `course.toml` read into plain, validated data.

`course.toml` is the one list of katas. Everything else (the CLI, the graders, the nbgrader export)
reads it through `load_course`; nothing else hard-codes a kata.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

COURSE_FILE = "course.toml"
SCHEMA_VERSION = 1

_ID = re.compile(r"^\d+\.\d+$")
_SLUG = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_DOTTED = re.compile(r"^torch(\.[A-Za-z_][A-Za-z0-9_]*)+$")

_KATA_FIELDS = {
    "id", "slug", "title", "points", "requires", "hints", "forbidden", "time_budget_s", "memory_mb",
    "pictures", "capstone", "warm_imports",
}
_DEFAULT_FIELDS = {"time_budget_s", "memory_mb"}
_TOP_FIELDS = {"schema", "title", "course_id", "defaults", "kata"}


class CourseError(Exception):
    """`course.toml` is missing or invalid. Each problem names the file, the kata and the field."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


class CourseNotFound(CourseError):
    """No `course.toml` where kata looked: not an invalid course, no course at all."""


@dataclass(frozen=True)
class Kata:
    id: str
    slug: str
    title: str
    points: float
    requires: tuple[str, ...]
    hints: tuple[str, ...]
    forbidden: tuple[str, ...]
    time_budget_s: float
    memory_mb: int
    root: Path
    pictures: str | None = None  # what `kata viz` draws for this kata, for people; None: no pictures
    capstone: bool = False  # the kata `kata train-demo` trains with (its training code, on the student's model)
    warm_imports: tuple[str, ...] = ()  # torch modules its graders import while loading: the warm pool's zygotes
    # for this kata import them once (`kata.pool`), instead of every run

    @property
    def dirname(self) -> str:
        return f"{self.id}-{self.slug}"

    @property
    def module_name(self) -> str:
        """The name under which earlier katas' pieces are imported: `kata.earlier.<module_name>`."""
        return self.slug.replace("-", "_")

    @property
    def exercise_dir(self) -> Path:
        return self.root / "exercises" / self.dirname

    @property
    def exercise(self) -> Path:
        return self.exercise_dir / "exercise.py"

    @property
    def readme(self) -> Path:
        return self.exercise_dir / "README.md"

    @property
    def sanity(self) -> Path:
        """Quick shape checks the student runs with Python (`python exercises/<kata>/sanity.py`): no grading."""
        return self.exercise_dir / "sanity.py"

    @property
    def solution(self) -> Path:
        return self.root / "solutions" / self.dirname / "solution.py"

    @property
    def graders(self) -> Path:
        return self.root / "graders" / self.dirname

    @property
    def mistakes_dir(self) -> Path:
        return self.graders / "mistakes"

    def grader_files(self) -> list[Path]:
        return sorted(self.graders.glob("test_*.py"))

    def mistakes(self) -> list[Path]:
        return sorted(p for p in self.mistakes_dir.glob("*.py") if not p.name.startswith("_"))

    @property
    def alternatives_dir(self) -> Path:
        return self.graders / "alternatives"

    def alternatives(self) -> list[Path]:
        return sorted(p for p in self.alternatives_dir.glob("*.py") if not p.name.startswith("_"))

    def label(self) -> str:
        return f"{self.id} ({self.slug})"


@dataclass(frozen=True)
class Course:
    root: Path
    title: str
    course_id: str
    katas: tuple[Kata, ...]

    @property
    def file(self) -> Path:
        return self.root / COURSE_FILE

    @property
    def capstone(self) -> Kata | None:
        """The kata marked `capstone = true`, whose training code `kata train-demo` runs; None if none is."""
        return next((k for k in self.katas if k.capstone), None)

    @property
    def with_pictures(self) -> tuple[Kata, ...]:
        """The katas `kata viz` draws, in course order."""
        return tuple(k for k in self.katas if k.pictures)

    def find(self, key: str) -> Kata:
        """A kata by id (`9.2`) or slug (`layer-norm`); `KeyError` with the known ids otherwise."""
        for kata in self.katas:
            if key in (kata.id, kata.slug, kata.dirname):
                return kata
        known = ", ".join(k.id for k in self.katas)
        raise KeyError(f"no kata {key!r} in {self.file} (known: {known})")

    def index(self, kata: Kata) -> int:
        """The kata's place in the course, by id (a copy with other limits, as Gradescope's, has the same place)."""
        return next(i for i, k in enumerate(self.katas) if k.id == kata.id)

    def kata_at(self, folder: Path) -> Kata | None:
        """The kata whose exercise folder is `folder` or holds it (`kata check` run in
        `exercises/9.3-attention/` means 9.3); None elsewhere."""
        here = Path(folder).resolve()
        for kata in self.katas:
            if here == kata.exercise_dir.resolve() or kata.exercise_dir.resolve() in here.parents:
                return kata
        return None

    def before(self, kata: Kata) -> tuple[Kata, ...]:
        return self.katas[: self.index(kata)]

    def prerequisites(self, kata: Kata) -> list[Kata]:
        """Every kata this one builds on, directly or not, in course order."""
        seen: set[str] = set()
        stack = list(kata.requires)
        while stack:
            kid = stack.pop()
            if kid not in seen:
                seen.add(kid)
                stack.extend(self.find(kid).requires)
        return [k for k in self.katas if k.id in seen]


def find_course_root(start: Path | None = None) -> Path:
    """The folder holding `course.toml`: `$KATA_COURSE`, else the first one up from `start` (cwd)."""
    env = os.environ.get("KATA_COURSE")
    if env:
        root = Path(env).expanduser().resolve()
        if not (root / COURSE_FILE).is_file():
            raise CourseNotFound([f"no course found: KATA_COURSE={env}, but there is no {COURSE_FILE} there"])
        return root
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / COURSE_FILE).is_file():
            return folder
    raise CourseNotFound([
        f"no course found (looked for {COURSE_FILE} in {here} and above; run kata inside the course, the "
        "folder you cloned, or set KATA_COURSE to it)"
    ])


def load_course(root: Path | None = None) -> Course:
    """Read and validate `course.toml`; `CourseError` lists every problem found."""
    root = find_course_root() if root is None else Path(root).resolve()
    path = root / COURSE_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CourseError([f"{path}: file not found"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise CourseError([f"{path}: not valid TOML: {exc}"]) from None
    return _validate(path, data)


def _validate(path: Path, data: dict) -> Course:
    problems: list[str] = []

    def problem(where: str, message: str) -> None:
        problems.append(f"{path}: {where}: {message}")

    for key in sorted(set(data) - _TOP_FIELDS):
        problem(f"field {key!r}", "unknown field")
    if data.get("schema") != SCHEMA_VERSION:
        problem("field 'schema'", f"must be {SCHEMA_VERSION}, found {data.get('schema')!r}")
    title = data.get("title", "")
    course_id = data.get("course_id", "")
    if not isinstance(title, str) or not title:
        problem("field 'title'", "must be a non-empty string")
    if not isinstance(course_id, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", course_id or ""):
        problem("field 'course_id'", "must be letters, digits, '_' or '-'")

    defaults = data.get("defaults", {})
    for key in sorted(set(defaults) - _DEFAULT_FIELDS):
        problem(f"[defaults] field {key!r}", "unknown field")

    raw_katas = data.get("kata", [])
    if not isinstance(raw_katas, list) or not raw_katas:
        problem("[[kata]]", "the course lists no katas")
        raw_katas = []

    katas: list[Kata] = []
    for position, raw in enumerate(raw_katas, start=1):
        where = f"kata {raw.get('id', f'#{position}')}"

        def field(name: str, kind, check, message: str, default=None, *, raw=raw, where=where):
            value = raw.get(name, defaults.get(name, default))
            if value is None or not isinstance(value, kind) or isinstance(value, bool) or not check(value):
                problem(f"{where}: field {name!r}", message + (f", found {value!r}" if value is not None
                                                               else ", missing"))
                return None
            return value

        for key in sorted(set(raw) - _KATA_FIELDS):
            problem(f"{where}: field {key!r}", "unknown field")
        kid = field("id", str, _ID.match, "must look like '9.1'")
        slug = field("slug", str, _SLUG.match, "must be lowercase words joined by '-'")
        title_ = field("title", str, bool, "must be a non-empty string")
        points = field("points", (int, float), lambda v: v > 0, "must be a positive number")
        requires = field("requires", list, lambda v: all(isinstance(x, str) for x in v),
                         "must be a list of kata ids", default=[])
        hints = field("hints", list, lambda v: v and all(isinstance(x, str) and x.strip() for x in v),
                      "must be a non-empty list of hint texts (concept, approach, near-solution)")
        forbidden = field("forbidden", list, lambda v: all(isinstance(x, str) and _DOTTED.match(x) for x in v),
                          "must be a list of dotted torch names like 'torch.softmax'", default=[])
        budget = field("time_budget_s", (int, float), lambda v: v > 0, "must be a positive number of seconds")
        memory = field("memory_mb", int, lambda v: v > 0, "must be a positive number of MiB")
        pictures = (field("pictures", str, str.strip, "must say in a few words what the pictures show")
                    if "pictures" in raw else "")
        warm_imports = field("warm_imports", list, lambda v: all(isinstance(x, str) and _DOTTED.match(x) for x in v),
                             "must be a list of dotted torch module names like 'torch._dynamo'", default=[])
        capstone = raw.get("capstone", False)
        if not isinstance(capstone, bool):
            problem(f"{where}: field 'capstone'", f"must be true or false, found {capstone!r}")
        if None in (kid, slug, title_, points, requires, hints, forbidden, budget, memory, pictures, warm_imports):
            continue
        kata = Kata(kid, slug, title_, float(points), tuple(requires), tuple(h.strip() for h in hints),
                    tuple(forbidden), float(budget), memory, path.parent, pictures=pictures.strip() or None,
                    capstone=capstone is True, warm_imports=tuple(warm_imports))
        # Not the pictures file: the sandbox of `kata grade` shows the later katas' solution.py alone.
        for label, file in (("exercise", kata.exercise), ("solution", kata.solution), ("README", kata.readme)):
            if not file.is_file():
                problem(f"{where}: {label}", f"missing file {file.relative_to(path.parent)}")
        if not kata.grader_files():
            problem(f"{where}: graders", f"no test_*.py in {kata.graders.relative_to(path.parent)}")
        katas.append(kata)

    _check_unique(katas, problem)
    capstones = [k.id for k in katas if k.capstone]
    if len(capstones) > 1:
        problem("field 'capstone'", f"one kata at most is the capstone, found {', '.join(capstones)}")
    _check_prerequisites(katas, problem)
    if problems:
        raise CourseError(problems)
    return Course(path.parent, title, course_id, tuple(katas))


def _check_unique(katas: list[Kata], problem) -> None:
    for attr in ("id", "slug"):
        seen: set[str] = set()
        for kata in katas:
            value = getattr(kata, attr)
            if value in seen:
                problem(f"kata {kata.id}: field {attr!r}", f"duplicate {attr} {value!r}")
            seen.add(value)


def _check_prerequisites(katas: list[Kata], problem) -> None:
    by_id = {k.id: k for k in katas}
    for kata in katas:
        for req in kata.requires:
            if req not in by_id:
                problem(f"kata {kata.id}: field 'requires'", f"unknown prerequisite {req!r}")
            elif req == kata.id:
                problem(f"kata {kata.id}: field 'requires'", "a kata cannot require itself")
    # Depth-first search for a cycle; report it once, as the path that closes it.
    state: dict[str, str] = {}

    def visit(kid: str, trail: list[str]) -> bool:
        state[kid] = "open"
        for req in by_id[kid].requires:
            if req not in by_id or req == kid:
                continue
            if state.get(req) == "open":
                cycle = [*trail[trail.index(req):], req] if req in trail else [kid, req]
                problem(f"kata {kid}: field 'requires'", "prerequisite cycle " + " -> ".join(cycle))
                return True
            if state.get(req) is None and visit(req, [*trail, req]):
                return True
        state[kid] = "done"
        return False

    for kata in katas:
        if state.get(kata.id) is None and visit(kata.id, [kata.id]):
            break
