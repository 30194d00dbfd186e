"""Notebooks built from the course: pure functions from a kata (its files, its row of course.toml) to
nbformat notebooks.

One layout serves both kinds of notebook:

1. the kata's README (read-only markdown) and a short note on how the notebook works;
2. setup: `import torch` (so its import never writes to a graded cell's output);
3. given: the reference solution of every earlier kata this one builds on (the pieces its solution
   imports with `from kata.earlier.X import ...`, and the pieces those import), so the notebook runs
   on its own;
4. your code: the kata's solution with those import lines dropped. In the nbgrader source notebook it
   keeps its `### BEGIN/END SOLUTION` regions, so nbgrader's release is the stub `kata.stubs` derives;
5. sanity checks: quick shape checks the student can run (`exercises/<kata>/sanity.py` when the kata
   has one, else a check that the public names exist);
6. nbgrader: a grade cell worth the kata's points whose hidden tests carry the kata's graders and grade
   the student's cells with `kata.nbgrader.runtime.grade`; the student notebook instead ends with a
   cell that runs `kata check` on the student's code.
"""

from __future__ import annotations

import ast
import base64
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode

from kata import scoring
from kata.course import Course, Kata
from kata.nbgrader.runtime import GIVEN_MARK, GRADE_IMPORT, SANITY_MARK, SETUP_MARK, YOURS_MARK
from kata.stubs import strip_markers

EARLIER_PACKAGE = "kata.earlier"
SANITY_FILE = "sanity.py"
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
HIDDEN_END = "### END HIDDEN TESTS"
# nbgrader acts on these anywhere in a line of any cell; only solution and grade cells may hold them.
DELIMITERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


class NotebookError(ValueError):
    """A kata cannot be turned into a notebook (the message names the file and the reason)."""


@dataclass(frozen=True)
class EarlierImport:
    """`from kata.earlier.<module> import <names>`: one line (or parenthesised block) of a solution."""

    module: str  # the kata's module name, e.g. "multi_head_attention"
    names: tuple[tuple[str, str | None], ...]  # (name, alias)
    first: int  # 1-based lines the statement spans
    last: int
    text: str  # the statement as written


def earlier_imports(source: str, filename: str = "solution.py") -> list[EarlierImport]:
    """The module-level `from kata.earlier.X import ...` statements of `source`."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise NotebookError(f"{filename}:{exc.lineno}: cannot parse: {exc.msg}") from None
    lines = source.split("\n")
    found = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(
                EARLIER_PACKAGE + "."):
            module = node.module.removeprefix(EARLIER_PACKAGE + ".")
            text = "\n".join(lines[node.lineno - 1:node.end_lineno])
            found.append(EarlierImport(module, tuple((a.name, a.asname) for a in node.names), node.lineno,
                                       node.end_lineno, text))
        elif isinstance(node, ast.Import) and any(a.name.startswith(EARLIER_PACKAGE + ".") for a in node.names):
            raise NotebookError(f"{filename}:{node.lineno}: write `from {EARLIER_PACKAGE}.<kata> import <names>` "
                                "(the notebook export gives those names as code cells)")
    return found


def without_earlier_imports(source: str, imports: list[EarlierImport], note: str = "") -> str:
    """`source` without its earlier-kata imports and the comment block right above each; `note` (a comment)
    takes the place of the first one."""
    lines = source.split("\n")
    drop: set[int] = set()
    for imp in imports:
        drop.update(range(imp.first - 1, imp.last))
        above = imp.first - 2
        while above >= 0 and lines[above].lstrip().startswith("#") and above not in drop:
            drop.add(above)
            above -= 1
    out = []
    noted = False
    for index, line in enumerate(lines):
        if index in drop:
            if note and not noted:
                out.append(note)
                noted = True
            continue
        out.append(line)
    return "\n".join(out)


def given_katas(course: Course, kata: Kata) -> list[Kata]:
    """The earlier katas whose reference solutions a notebook of `kata` gives: the ones its solution
    imports, and the ones theirs import, in course order."""
    by_module = {k.module_name: k for k in course.katas}
    seen: dict[str, Kata] = {}
    stack = [kata]
    while stack:
        current = stack.pop()
        for imp in earlier_imports(_read(current.solution), str(current.solution)):
            earlier = by_module.get(imp.module)
            if earlier is None:
                raise NotebookError(f"{current.solution}:{imp.first}: no kata named {imp.module!r} in course.toml")
            if course.index(earlier) >= course.index(current):
                raise NotebookError(f"{current.solution}:{imp.first}: kata {current.id} imports kata "
                                    f"{earlier.id}, which does not come before it")
            if earlier.id not in seen:
                seen[earlier.id] = earlier
                stack.append(earlier)
    return [k for k in course.katas if k.id in seen]


def defined_names(source: str) -> set[str]:
    """The names a module defines at top level (functions, classes, assignments), imports aside."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names - {"__all__"}


def check_shared_namespace(kata: Kata, given: list[Kata]) -> None:
    """In a notebook every cell shares one namespace: two katas defining the same name would make one
    kata's code call the other's. Refuse that (in files each kata is its own module)."""
    owner: dict[str, str] = {}
    for source_kata in [*given, kata]:
        for name in defined_names(strip_markers(_read(source_kata.solution))):
            if name in owner and owner[name] != source_kata.id:
                raise NotebookError(f"{source_kata.solution}: {name!r} is also defined by kata {owner[name]}, "
                                    "given in the same notebook: rename one of them")
            owner[name] = source_kata.id


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotebookError(f"{path}: file not found") from None


def _check_delimiters(text: str, where: str) -> None:
    for line_no, line in enumerate(text.split("\n"), start=1):
        for delimiter in DELIMITERS:
            if delimiter in line:
                raise NotebookError(f"{where}:{line_no}: {delimiter!r} in a cell that nbgrader would reject "
                                    "(it marks solution and hidden-test regions)")


def given_code(earlier: Kata, used: list[EarlierImport]) -> str:
    """An earlier kata's reference solution as a given cell: markers and its own earlier imports removed,
    plus `alias = name` lines for the names imported under another name."""
    source = strip_markers(_read(earlier.solution))
    body = without_earlier_imports(source, earlier_imports(source, str(earlier.solution))).strip("\n")
    aliases = sorted({(alias, name) for imp in used if imp.module == earlier.module_name
                      for name, alias in imp.names if alias and alias != name})
    header = (f"{GIVEN_MARK}: kata {earlier.id} ({earlier.title}), its reference solution. Run it; "
              "your code below uses it.")
    return "\n".join([header, body, *(f"{alias} = {name}" for alias, name in aliases)])


def public_names(source: str) -> list[str]:
    """The functions and classes a solution defines at module level, in order, private ones aside."""
    tree = ast.parse(source)
    return [n.name for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef) and not n.name.startswith("_")]


def sanity_code(kata: Kata) -> str:
    """The sanity-check cell: `exercises/<kata>/sanity.py` without its `from exercise import ...` lines
    (in the notebook those names come from the student's cell), or a check that the public names exist."""
    path = kata.exercise_dir / SANITY_FILE
    header = f"{SANITY_MARK}: quick checks of shapes you can run; the grading checks far more."
    if path.is_file():
        source = _read(path)
        tree = ast.parse(source, filename=str(path))
        drop: set[int] = set()
        for node in tree.body:
            if (isinstance(node, ast.ImportFrom) and node.module == "exercise") or (
                    isinstance(node, ast.Import) and any(a.name == "exercise" for a in node.names)):
                drop.update(range(node.lineno - 1, node.end_lineno))
            elif (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                  and isinstance(node.value.value, str) and node is tree.body[0]):
                drop.update(range(node.lineno - 1, node.end_lineno))  # the file's docstring
        body = "\n".join(line for i, line in enumerate(source.split("\n")) if i not in drop).strip("\n")
        body = re.sub(r"\n{3,}", "\n\n", body)
        return f"{header}\n{body}"
    names = public_names(_read(kata.solution))
    return "\n".join([
        header,
        f"for _name in {tuple(names)!r}:",
        "    assert _name in globals(), f\"{_name} is not defined: run the cell with your code first\"",
        f"print(\"Defined: {', '.join(names)}. Now run the kata's checks.\")",
    ])


def _literal(text: str) -> str:
    """`text` as a Python literal for a grade cell: a raw triple-quoted string a reader can review, or,
    when that cannot hold it (or it holds a line nbgrader would act on), compressed base64."""
    safe = ("'''" not in text and not text.endswith("\\") and "\r" not in text
            and not any(d in text for d in DELIMITERS))
    if safe:
        return "r'''" + text + "'''"
    blob = base64.b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii")
    chunks = "\n".join(f"    {blob[i:i + 100]!r}" for i in range(0, len(blob), 100))
    return f"__import__('zlib').decompress(__import__('base64').b64decode(\n{chunks}\n)).decode('utf-8')"


def grader_sources(kata: Kata) -> dict[str, str]:
    """The kata's grader files (test_*.py and any helper module beside them), by file name."""
    files = sorted(p for p in kata.graders.iterdir() if p.is_file() and p.suffix == ".py")
    if not any(p.name.startswith("test_") for p in files):
        raise NotebookError(f"{kata.graders}: no test_*.py grader")
    return {p.name: _read(p) for p in files}


def grade_source(kata: Kata, imports: list[EarlierImport]) -> str:
    """The grade cell: a visible note, then the hidden tests that grade the student's cells."""
    graders = grader_sources(kata)
    entries = "\n".join(f"    {name!r}: {_literal(source)}," for name, source in graders.items())
    import_lines = [imp.text.split("\n") for imp in imports]
    flat = [line for block in import_lines for line in block]
    return "\n".join([
        f"# Autograder (read-only): kata {kata.id}, {kata.points:g} points, shared by its hidden checks.",
        "# When your notebook is graded, the checks run here on the code of the cells between the given code",
        f"# and the sanity checks, in a separate process limited to {kata.time_budget_s:g} s, as "
        f"`kata check {kata.id}` grades exercise.py.",
        HIDDEN_BEGIN,
        "try:",
        f"    {GRADE_IMPORT}",
        "except ImportError as _kata_error:",
        "    _kata_grade = None",
        "    print(f'GRADING ERROR (the grader set-up, not your code): {_kata_error}')",
        "_kata_graders = {",
        entries,
        "}",
        f"_kata_imports = {flat!r}",
        f"_kata_grade({kata.id!r}, _kata_graders, points={kata.points!r}, imports=_kata_imports) "
        "if _kata_grade else 0.0",
        HIDDEN_END,
    ])


def intro_markdown(kata: Kata, given: list[Kata], *, nbgrader: bool) -> str:
    pieces = ", ".join(f"{k.id} ({k.title})" for k in given)
    lines = [
        "## How this notebook works",
        "",
        "- Run the cells from the top. Read-only cells are the course's: the setup"
        + (f", the pieces of earlier katas this one builds on ({pieces}), given as their reference solutions"
           if given else "")
        + ", the sanity checks" + (" and the autograder." if nbgrader else " and the check."),
        f"- Write your code in the cell that starts with `{YOURS_MARK}`: replace each `# YOUR CODE HERE` / "
        "`raise NotImplementedError()`. Keep the names and signatures the README lists.",
    ]
    if nbgrader:
        lines += [
            "- Helpers may go in extra cells right below yours, above the sanity checks: the cells between "
            "the given code and the sanity checks are graded together as one Python file. IPython lines "
            "(`%...`, `!...`) in them are ignored by the grader.",
            f"- Grading runs the kata's hidden checks on that file in a separate process, limited to "
            f"{kata.time_budget_s:g} s. The kata's {kata.points:g} points are shared by the checks: each "
            "check you pass earns its share, but a failed critical check (what the kata builds is wrong on "
            f"ordinary inputs) caps the kata at {scoring.CRITICAL_CAP:.0%} of its points. Do not rename this "
            "notebook.",
        ]
    else:
        lines += [
            f"- The last cell writes that cell's latest run to a file beside this notebook and runs "
            f"`kata check {kata.id}` on it: the same checks, the same feedback, your progress recorded.",
        ]
    return "\n".join(lines)


def _cell(kind: str, source: str, cell_id: str, nbgrader: dict | None, *, readonly: bool = False) -> NotebookNode:
    make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
    cell = make(source)
    cell.id = cell_id[:64]
    if nbgrader is not None:
        cell.metadata["nbgrader"] = nbgrader
    elif readonly:
        cell.metadata["editable"] = False
        cell.metadata["deletable"] = False
    return cell


def _nbgrader_meta(grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False,
                   points: float | None = None) -> dict:
    meta = {"schema_version": 3, "grade": grade, "solution": solution, "locked": locked, "task": False,
            "grade_id": grade_id}
    if grade:
        meta["points"] = points
    return meta


def _notebook(cells: list[NotebookNode]) -> NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.nbformat, nb.nbformat_minor = 4, 5
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = cells
    nbformat.validate(nb)
    return nb


def build_notebook(course: Course, kata: Kata, *, nbgrader: bool, code: str | None = None,
                   name: str | None = None) -> NotebookNode:
    """The notebook of `kata`: an nbgrader source notebook (`nbgrader=True`: solution regions and hidden
    tests) or a student notebook whose last cell runs `kata check` (`code`: the student's starting code,
    the derived stub by default; `name`: the notebook's file name, which names the file it checks)."""
    solution = _read(kata.solution)
    given = given_katas(course, kata)
    check_shared_namespace(kata, given)
    start = solution if nbgrader else code
    if start is None:
        from kata.stubs import derive_stub

        start = derive_stub(solution, filename=str(kata.solution))
    imports = earlier_imports(start, str(kata.solution if nbgrader else kata.exercise))
    all_imports = imports + [imp for k in given for imp in earlier_imports(_read(k.solution), str(k.solution))]
    names = ", ".join(name if not alias else f"{name} as {alias}" for imp in imports for name, alias in imp.names)
    note = f"# Given in the cells above: {names}." if names else ""
    yours = "\n".join([f"{YOURS_MARK} for kata {kata.id} ({kata.title}).",
                       without_earlier_imports(start, imports, note).strip("\n")])
    slug = kata.slug

    def meta(grade_id: str, **flags) -> dict | None:
        return _nbgrader_meta(grade_id, **flags) if nbgrader else None

    readme = _read(kata.readme).strip("\n")
    setup = f"{SETUP_MARK}: torch for the code below. Run this cell first.\nimport torch"
    cells = [
        _cell("markdown", readme, f"{slug}-readme", meta(f"{slug}_readme", locked=True), readonly=True),
        _cell("markdown", intro_markdown(kata, given, nbgrader=nbgrader), f"{slug}-how",
              meta(f"{slug}_how", locked=True), readonly=True),
        _cell("code", setup, f"{slug}-setup", meta(f"{slug}_setup", locked=True), readonly=True),
    ]
    for earlier in given:
        cells.append(_cell("code", given_code(earlier, all_imports), f"{slug}-given-{earlier.slug}",
                           meta(f"{slug}_given_{earlier.slug}", locked=True), readonly=True))
    cells.append(_cell("code", yours, f"{slug}-solution", meta(f"{slug}_solution", solution=True)))
    cells.append(_cell("code", sanity_code(kata), f"{slug}-sanity", meta(f"{slug}_sanity", locked=True),
                       readonly=True))
    if nbgrader:
        cells.append(_cell("code", grade_source(kata, imports), f"{slug}-grade",
                           meta(f"{slug}_grade", grade=True, locked=True, points=kata.points)))
    else:
        lines = [imp.text for imp in imports]
        cells.append(_cell("code", "\n".join([
            f"# Check (read-only): runs `kata check {kata.id}` on the latest run of your code cell.",
            "from kata.nbgrader.runtime import check_notebook",
            "",
            f"check_notebook({kata.id!r}, {lines!r}, notebook={(name or kata.dirname + '.ipynb')!r})",
        ]), f"{slug}-check", None, readonly=True))
    for cell in cells:
        if not (nbgrader and cell.id in (f"{slug}-solution", f"{slug}-grade")):
            _check_delimiters(cell.source, f"kata {kata.id}: cell {cell.id}")
    return _notebook(cells)
