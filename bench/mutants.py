"""Mutation testing of the graders: every mutant of each kata's reference solution, graded by its graders.

Cosmic Ray's mutation operators (its core set: binary, comparison and unary operators replaced, booleans,
`and`/`or`, numbers +-1, `for` loops that never run, ...) are applied to `solutions/<kata>/solution.py`
one at a time, through `cosmic_ray.mutating.mutate_code`, without Cosmic Ray's own test loop (which
would copy the file in place and run a test command per mutant). Each mutant is graded as `kata verify`
grades a planted mistake: the whole file as the student's, through `run_kata` on one warm pool of
zygotes, `--jobs` at a time, the checks that name no mistake skipped once one has failed.

A mutant is *caught* when it does not get full marks; *named* when a check gives it a diagnosis of a
classic mistake (*in general terms*, a column of its own inside *named*, when its only ones come from the
toolkit's fallback error patterns: a Python operator torch refuses, `^` on floats, `if tensor:`, `1 - mask`, a `//`
in the gradient, a dimension the tensor lacks), *localised* when its
only diagnoses find the part at fault (ids `fault-in-...`);
*raised* when it gets no diagnosis but the failure is an exception in the student's code (whose
traceback shows the line), which the targets do not count. Of those, *raised at the mutation* are the
ones whose every exception surfaced in the mutated statement itself: the report's "In your code:" shows
the student the very line at fault. They get a column of their own, beside the target, not in it.
A survivor is either *equivalent*, listed in `bench/mutants/equivalent.toml` with the reason no input of
the contract can tell it apart, or a gap (`bench/mutants/gaps.md`). Targets: at least 98% of the
non-equivalent mutants caught, at least 80% named or localised.

Not mutated, by construction: docstrings and comments (no operator changes a string or a comment), type
hints (annotations are not evaluated by the checks: `int | None` made `int & None` is no mistake), and a
mutant whose code is the same as an earlier one's (two operators can make one program).

    python bench/mutants.py [KATA ...] [--jobs N] [--json]
"""

from __future__ import annotations

import argparse
import ast
import functools
import inspect
import io
import json
import sys
import tempfile
import time
import tokenize
import tomllib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import cosmic_ray.plugins
from cosmic_ray.ast import ast_nodes, get_ast
from cosmic_ray.mutating import mutate_code

from kata.course import Course, Kata, load_course
from kata.grading import protocol
from kata.grading.failure import ErrorPattern
from kata.pool import open_pool
from kata.runner import (
    CRASH,
    EXCEPTION,
    IMPORT_ERROR,
    MEMORY,
    NOT_IMPLEMENTED,
    PASSED,
    SYNTAX_ERROR,
    TIMEOUT,
    KataResult,
    run_kata,
)
from kata.toolkit import common

REPO = Path(__file__).resolve().parents[1]
EQUIVALENT = REPO / "bench" / "mutants" / "equivalent.toml"
LOCALISED = "fault-in-"
# The toolkit's fallback error patterns: they read an error in general terms, in whichever kata lists them.
GENERAL = frozenset(p.mistake.id for p in vars(common).values() if isinstance(p, ErrorPattern) and p.fallback)
TARGET_CAUGHT = 0.98
TARGET_NAMED = 0.80
RAISED = (EXCEPTION, IMPORT_ERROR, SYNTAX_ERROR, CRASH, TIMEOUT, MEMORY)  # outcomes of a file that raised or hung


@functools.cache
def operators() -> tuple[str, ...]:
    """Cosmic Ray's core operators that need no arguments (the variable replacer and inserter are for causal
    experiments on a named variable), in its own order."""
    names = []
    for name in cosmic_ray.plugins.operator_names():
        params = list(inspect.signature(cosmic_ray.plugins.get_operator(name).__init__).parameters.values())[1:]
        if all(p.default is not p.empty for p in params if p.kind is p.POSITIONAL_OR_KEYWORD):
            names.append(name)
    return tuple(names)


@dataclass
class Mutant:
    """One mutant of a solution, and what its grading showed."""

    kata: str
    operator: str  # without Cosmic Ray's provider prefix, e.g. ReplaceBinaryOperator_Sub_Add
    occurrence: int  # Cosmic Ray's occurrence of the operator in the file
    line: int
    function: str  # the enclosing def, qualified (`MultiHeadAttention.forward.split_heads`), or <module>
    before: str  # the changed line, without its comment
    after: str
    key_occurrence: int = 0  # among mutants with the same operator, function, before and after
    code: str = field(default="", repr=False)
    outcome: str = ""
    points: float = 0.0
    max_points: float = 0.0
    diagnoses: list[str] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)  # how many checks ended with each status
    seconds: float = 0.0
    equivalent: str | None = None  # the reason, from the table
    statement: list[int] = field(default_factory=list)  # the lines of the mutated statement (a block's header only)
    raised_at: list[int] = field(default_factory=list)  # where each exception surfaced: its innermost line of the file

    @property
    def key(self) -> tuple[str, str, str, str, str, int]:
        return (self.kata, self.operator, self.function, self.before, self.after, self.key_occurrence)

    @property
    def caught(self) -> bool:
        return self.outcome != PASSED or self.points < self.max_points

    @property
    def raised(self) -> bool:
        """An exception in the student's code ended a check, or the whole file (whose traceback shows the line)."""
        return self.outcome in RAISED or bool(self.statuses.get(protocol.ERROR))

    @property
    def told_not_implemented(self) -> bool:
        """Reported as an unwritten stub ("not implemented yet"): torch's own NotImplementedError (an operation
        with no kernel for the dtype) taken for the stub's. A wrong message: the code is written."""
        return self.outcome == NOT_IMPLEMENTED or bool(self.statuses.get(NOT_IMPLEMENTED))

    @property
    def named(self) -> bool:
        return self.caught and any(not d.startswith(LOCALISED) for d in self.diagnoses)

    @property
    def named_in_general_terms(self) -> bool:
        """Named only by the toolkit's fallback error patterns (`GENERAL`), which read an error in any kata."""
        return self.named and {d for d in self.diagnoses if not d.startswith(LOCALISED)} <= GENERAL

    @property
    def localised(self) -> bool:
        return self.caught and not self.named and any(d.startswith(LOCALISED) for d in self.diagnoses)

    @property
    def raised_only(self) -> bool:
        """Caught by an exception of its own code, with no diagnosis."""
        return self.caught and self.raised and not self.named and not self.localised

    @property
    def raised_at_mutation(self) -> bool:
        """Raised with no diagnosis, and every exception surfaced in the mutated statement: the traceback the
        report shows points at the mistake itself, not at a later line its wrong value broke."""
        return self.raised_only and bool(self.raised_at) and set(self.raised_at) <= set(self.statement)

    def to_dict(self) -> dict:
        data = asdict(self)
        del data["code"]
        return data | {"caught": self.caught, "named": self.named,
                       "named_in_general_terms": self.named_in_general_terms, "localised": self.localised,
                       "raised": self.raised,
                       "raised_at_mutation": self.raised_at_mutation,
                       "told_not_implemented": self.told_not_implemented}


def _code_only(line: str) -> str:
    """The line without its comment and surrounding blanks."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return line[:token.start[1]].strip()
    except (tokenize.TokenError, IndentationError, SyntaxError):  # a line that opens a bracket it closes later
        pass
    return line.strip()


def _in_annotation(node) -> bool:
    """The parso node is (part of) a type hint: a parameter's, a return's or an annotated assignment's."""
    child, parent = node, node.parent
    while parent is not None:
        index = parent.children.index(child)
        if parent.type == "tfpdef" and index >= 2:  # name ':' annotation
            return True
        if parent.type == "funcdef" and index > 0 and getattr(parent.children[index - 1], "value", "") == "->":
            return True
        if parent.type == "annassign" and index == 1:  # ':' annotation ['=' value]
            return True
        child, parent = parent, parent.parent
    return False


def _functions(source: str) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of every def and class, outermost first."""
    spans = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                spans.append((child.lineno, child.end_lineno, name))
                walk(child, name + ".")
            else:
                walk(child, prefix)

    walk(ast.parse(source), "")
    return spans


def _statements(source: str) -> list[tuple[int, int]]:
    """(first line, last line) of every statement; a block's (def, for, with, ...) is its header only."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.stmt):
            body = getattr(node, "body", None)
            last = body[0].lineno - 1 if isinstance(body, list) and body else node.end_lineno
            spans.append((node.lineno, max(node.lineno, last)))
    return spans


def enumerate_mutants(kata: str, source: str, names: list[str] | None = None) -> tuple[list[Mutant], Counter]:
    """Every mutant of `source` the operators make (all of Cosmic Ray's core ones by default), and how many
    were skipped by rule (`annotation`, `duplicate`)."""
    tree = get_ast(source)
    nodes = list(ast_nodes(tree))
    spans = _functions(source)
    statements = _statements(source)
    lines = source.splitlines()
    mutants: list[Mutant] = []
    skipped: Counter = Counter()
    seen_code = {source}
    for name in names or operators():
        operator = cosmic_ray.plugins.get_operator(name)()
        occurrence = 0
        for node in nodes:
            for _ in operator.mutation_positions(node):
                this, occurrence = occurrence, occurrence + 1
                if _in_annotation(node):
                    skipped["annotation"] += 1
                    continue
                code = mutate_code(source, cosmic_ray.plugins.get_operator(name)(), this)
                if code in seen_code:
                    skipped["duplicate"] += 1
                    continue
                seen_code.add(code)
                changed = [i for i, (a, b) in enumerate(zip(lines, code.splitlines(), strict=False)) if a != b]
                at = changed[0] if changed else node.start_pos[0] - 1
                after = code.splitlines()[at] if at < len(code.splitlines()) else ""
                function = next((n for first, last, n in reversed(spans) if first <= at + 1 <= last), "<module>")
                first, last = min(((a, b) for a, b in statements if a <= at + 1 <= b), key=lambda ab: ab[1] - ab[0],
                                  default=(at + 1, at + 1))
                mutants.append(Mutant(kata, name.split("/", 1)[1], this, at + 1, function, _code_only(lines[at]),
                                      _code_only(after), code=code, statement=list(range(first, last + 1))))
    counts: Counter = Counter()
    for mutant in mutants:
        mutant.key_occurrence = counts[mutant.key]
        counts[mutant.key] += 1
    return mutants, skipped


def load_equivalent(path: Path = EQUIVALENT) -> dict[tuple, str]:
    """The reviewed table: each mutant shown equivalent, by its stable key, and the reason."""
    if not path.exists():
        return {}
    table = tomllib.loads(path.read_text(encoding="utf-8"))
    return {(e["kata"], e["operator"], e["function"], e["before"], e["after"], e.get("occurrence", 0)): e["reason"]
            for e in table.get("equivalent", [])}


def read_report(path: Path) -> dict[str, dict]:
    """The mutants of an earlier run, kata id -> {"all": its mutants, "skipped": counts}: a `--json` report, or
    a `--record` file (`.jsonl`, several runs' may be joined: a mutant recorded twice counts once)."""
    text = path.read_text(encoding="utf-8")
    fields = set(Mutant.__dataclass_fields__)
    if path.suffix == ".jsonl":
        rows = [json.loads(line) for line in text.splitlines()]
        katas = {row["kata"]: {"all": [], "skipped": {}} for row in rows}
    else:
        katas = json.loads(text)["katas"]
        rows = [m for data in katas.values() for m in data["all"]]
        for data in katas.values():
            data["all"] = []
    unique = {m.key: m for m in (Mutant(**{k: v for k, v in row.items() if k in fields}) for row in rows)}
    for mutant in unique.values():
        katas[mutant.kata]["all"].append(mutant)
    return katas


def judge(mutant: Mutant, result: KataResult) -> Mutant:
    mutant.outcome, mutant.seconds = result.outcome, result.seconds
    mutant.points, mutant.max_points = result.points, result.max_points
    mutant.diagnoses = sorted({d["id"] for c in result.checks for d in c.diagnoses})
    mutant.statuses = dict(Counter(c.status for c in result.checks))
    ended = ([result.frames] if result.outcome in RAISED else []) + [c.frames for c in result.checks
                                                                     if c.status == protocol.ERROR]
    mutant.raised_at = sorted({frames[-1].line for frames in ended if frames})
    return mutant


def grade(course: Course, mutants: dict[str, list[Mutant]], *, jobs: int = 1,
          on_done=None) -> dict[str, list[Mutant]]:
    """Grade every mutant (kata id -> its mutants) as `kata verify` grades a planted mistake; `on_done` is
    called with each mutant once it is judged."""
    # The cheapest katas first (course order; the capstone, whose runs train, last): a run cut short still
    # has whole katas. The katas whose zygotes import the same modules stay together (`kata verify`'s rule).
    order = sorted((course.find(k) for k in mutants), key=lambda k: (k.warm_imports, k.time_budget_s))
    with tempfile.TemporaryDirectory(prefix="kata-mutants-") as tmp, \
            open_pool(course, jobs, warm_imports=order[0].warm_imports if order else ()) as pool, \
            ThreadPoolExecutor(max_workers=max(1, jobs)) as threads:

        def one(kata: Kata, mutant: Mutant) -> Mutant:
            file = Path(tmp) / f"mutant_{kata.id.replace('.', '_')}_{mutant.operator}_{mutant.occurrence}.py"
            file.write_text(mutant.code, encoding="utf-8")
            judged = judge(mutant, run_kata(course, kata, file, devices="all", pool=pool, runs_at_once=jobs,
                                              cuda_checks_on_cpu=True, settle_early=True))
            if on_done:
                on_done(judged)
            return judged

        futures = [threads.submit(one, kata, m) for kata in order for m in mutants[kata.id]]
        try:
            for future in futures:
                future.result()
        except BaseException:
            threads.shutdown(wait=False, cancel_futures=True)
            raise
    return mutants


def summarise(mutants: list[Mutant]) -> dict:
    live = [m for m in mutants if not m.equivalent]
    caught = [m for m in live if m.caught]
    row = {"mutants": len(mutants), "equivalent": len(mutants) - len(live), "caught": len(caught),
           "named": sum(m.named for m in live), "named_in_general_terms": sum(m.named_in_general_terms for m in live),
           "localised": sum(m.localised for m in live),
           "raised": sum(m.raised_only for m in live),
           "raised_at_mutation": sum(m.raised_at_mutation for m in live),
           "told_not_implemented": sum(m.told_not_implemented for m in live),
           "survivors": [m.to_dict() for m in live if not m.caught]}
    row["caught_share"] = len(caught) / len(live) if live else 1.0
    row["named_or_localised_share"] = (row["named"] + row["localised"]) / len(live) if live else 1.0
    row["or_raised_at_mutation_share"] = ((row["named"] + row["localised"] + row["raised_at_mutation"]) / len(live)
                                          if live else 1.0)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("katas", nargs="*", metavar="KATA", help="kata ids or slugs (default: every kata)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants graded at a time (default 1)")
    parser.add_argument("--json", action="store_true", help="the whole report as JSON on stdout")
    parser.add_argument("--record", type=Path, metavar="JSONL",
                        help="append each mutant to this file as soon as it is graded (one JSON object a line)")
    parser.add_argument("--resume", action="store_true",
                        help="with --record: the mutants already in its file are taken from it, not graded again")
    parser.add_argument("--shard", default="0/1", metavar="K/N",
                        help="only every N-th mutant of each kata, from the K-th (0-based): to split a long run")
    parser.add_argument("--replay", type=Path, metavar="FILE",
                        help="grade nothing: judge the mutants of an earlier --json report (or --record file) "
                             "against the table as it is now")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    course = load_course(REPO)
    katas = [course.find(k) for k in args.katas] if args.katas else list(course.katas)
    table = load_equivalent()
    mutants, skipped = {}, {}
    if args.replay:
        earlier = read_report(args.replay)
        for kata in (k for k in katas if k.id in earlier):
            mutants[kata.id] = earlier[kata.id]["all"]
            skipped[kata.id] = Counter(earlier[kata.id]["skipped"])
    else:
        shard, shards = map(int, args.shard.split("/"))
        for kata in katas:
            made, skipped[kata.id] = enumerate_mutants(kata.id, kata.solution.read_text(encoding="utf-8"))
            mutants[kata.id] = made[shard::shards]
    for mutant in (m for ms in mutants.values() for m in ms):
        mutant.equivalent = table.get(mutant.key)
    recorded = {}
    if args.resume and args.record and args.record.exists():
        recorded = {m.key: m for data in read_report(args.record).values() for m in data["all"]}
    to_grade = {kata: [m for m in ms if m.key not in recorded] for kata, ms in mutants.items()}
    total = sum(map(len, to_grade.values()))
    done = Counter()

    def progress(mutant: Mutant) -> None:
        done["n"] += 1
        mark = ("named" if mutant.named else "localised" if mutant.localised else "raised" if mutant.raised
                else "caught") if mutant.caught else ("equivalent" if mutant.equivalent else "SURVIVED")
        print(f"[{done['n']}/{total}] {mutant.kata} {mutant.operator} line {mutant.line}: {mark} "
              f"{','.join(mutant.diagnoses)} ({mutant.seconds:.1f} s)", file=sys.stderr, flush=True)
        if args.record:
            with args.record.open("a", encoding="utf-8") as record:
                record.write(json.dumps(mutant.to_dict()) + "\n")

    if not args.replay:
        grade(course, to_grade, jobs=args.jobs, on_done=progress)
        for kata, ms in mutants.items():  # the recorded ones in place of theirs, with the table of now
            mutants[kata] = [recorded.get(m.key, m) for m in ms]
            for mutant in mutants[kata]:
                mutant.equivalent = table.get(mutant.key)
    keys = {m.key for ms in mutants.values() for m in ms}
    # An entry matches no mutant: its code changed, or the operators did (only a run of every mutant can tell).
    stale = [k for k in table if k[0] in mutants and k not in keys] if args.shard == "0/1" else []
    wrong = [m for ms in mutants.values() for m in ms if m.equivalent and m.caught]  # listed, yet caught
    report = {kata: summarise(ms) | {"skipped": dict(skipped[kata]), "all": [m.to_dict() for m in ms]}
              for kata, ms in mutants.items()}
    everything = summarise([m for ms in mutants.values() for m in ms])
    seconds = time.perf_counter() - started
    ok = (everything["caught_share"] >= TARGET_CAUGHT and everything["named_or_localised_share"] >= TARGET_NAMED
          and not stale and not wrong)
    if args.json:
        print(json.dumps({"ok": ok, "seconds": round(seconds, 1), "katas": report, "total": everything,
                          "stale_equivalent": [list(k) for k in stale],
                          "equivalent_but_caught": [m.to_dict() for m in wrong]}, indent=2))
        return 0 if ok else 1
    print(f"{'kata':<6}{'mutants':>8}{'equiv':>7}{'caught':>8}{'named':>7}{'general':>8}{'local':>7}{'raised':>8}"
          f"{'at mut':>8}{'stub?':>7}{'caught %':>10}{'named|loc %':>13}{'+at mut %':>11}")
    for kata, row in [*report.items(), ("all", everything)]:
        print(f"{kata:<6}{row['mutants']:>8}{row['equivalent']:>7}{row['caught']:>8}{row['named']:>7}"
              f"{row['named_in_general_terms']:>8}{row['localised']:>7}{row['raised']:>8}"
              f"{row['raised_at_mutation']:>8}{row['told_not_implemented']:>7}"
              f"{row['caught_share']:>10.1%}{row['named_or_localised_share']:>13.1%}"
              f"{row['or_raised_at_mutation_share']:>11.1%}")
    print(f"general: of the named, those named only by the toolkit's fallback error patterns "
          f"({', '.join(sorted(GENERAL))})")
    print("raised: no diagnosis, but an exception in the student's code (its traceback shows the line); at mut: of "
          "those, the ones whose every exception surfaced in the mutated statement itself (outside the target); "
          "stub?: told 'not implemented yet' (torch's NotImplementedError taken for the stub's), a wrong message")
    print(f"\ntargets: caught >= {TARGET_CAUGHT:.0%} of the non-equivalent mutants, named or localised >= "
          f"{TARGET_NAMED:.0%}: {'met' if ok else 'NOT met'}")
    for kata, row in report.items():
        for s in row["survivors"]:
            print(f"survivor {kata} {s['operator']} {s['function']} line {s['line']}: {s['before']!r} -> {s['after']!r}"
                  + (f" (occurrence {s['key_occurrence']})" if s["key_occurrence"] else ""))
    for key in stale:
        print(f"stale entry in {EQUIVALENT.relative_to(REPO)}: no such mutant {key}")
    for m in wrong:
        print(f"listed as equivalent, yet caught: {m.kata} {m.operator} {m.function} {m.before!r} -> {m.after!r}")
    print(f"\n{total} mutants {'judged again' if args.replay else 'graded'}, wall time {seconds:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
