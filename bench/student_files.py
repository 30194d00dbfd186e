"""Grade a corpus of student files through the real engine: do the graders' verdicts and diagnoses hold
for files written as students write them, not as the graders' authors think?

`bench/students/<kata id>/right/*.py` are correct files written differently from the reference (other
algorithms, helpers, prints); `bench/students/<kata id>/wrong/*.py` are files with one realistic mistake
each. Every file is a whole exercise file, as a student hands it in, and its docstring's first line says
what the student did (for a wrong file: the mistake, in plain words). Each is graded as `kata check`
grades it (seed 0, every device torch sees), all through one queue of warm zygotes, as `kata verify` does;
a wrong file settles early as a planted mistake does there (its points are then a lower bound).

Per kata the bench prints: the right files that kept full marks with no diagnosis (and every one that lost
points or got a diagnosis: a false alarm), and the wrong files caught (less than full marks), named (a
classic-mistake diagnosis), localised (a diagnosis whose id starts `fault-in-`), with the diagnoses each
was given, id and explanation, for a person to judge.

Those judgements live in `bench/students/review.toml`, one table per wrong file:

    ["9.4/wrong/heads_mixed.py"]
    verdict = "right"             # right: the diagnoses name the file's actual mistake
                                  # wrong: one of them claims what the file does not do
                                  # none: true of the file, but they do not name its mistake
    diagnoses = ["fault-in-split"]  # the diagnosis ids the judgement was made on
    why = "the split is what is wrong: it cuts the sequence, not the features"

A file whose diagnoses differ from the reviewed ones is counted "unreviewed" (its judgement is stale);
`--review-template` prints a table to fill for every such file.

    python bench/student_files.py [KATA ...] [--jobs N] [--json] [--review-template] [--replay RUN.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from kata.course import Course, Kata, load_course
from kata.pool import open_pool
from kata.runner import PASSED, KataResult, run_kata
from kata.verify import queue_order

REPO = Path(__file__).resolve().parents[1]
STUDENTS = REPO / "bench" / "students"
REVIEW = STUDENTS / "review.toml"
LOCALISED = "fault-in-"
VERDICTS = ("right", "wrong", "none")


@dataclass
class Graded:
    """One student file and what the graders made of it."""

    kata: str
    kind: str  # "right" or "wrong"
    name: str  # <kata>/<kind>/<file>, the key of review.toml
    what: str  # the docstring's first line: what the student did
    outcome: str
    points: float
    max_points: float
    seconds: float
    diagnoses: list[dict] = field(default_factory=list)  # {"id", "explanation"}, each id once
    failing: list[str] = field(default_factory=list)  # titles of the checks that did not pass
    review: str = ""  # right/wrong/none from review.toml, "unreviewed", or "" (no diagnosis to judge)
    why: str = ""

    @property
    def full_marks(self) -> bool:
        return self.outcome == PASSED and self.points >= self.max_points

    @property
    def ids(self) -> list[str]:
        return [d["id"] for d in self.diagnoses]

    @property
    def named(self) -> bool:
        return any(not i.startswith(LOCALISED) for i in self.ids)

    @property
    def localised(self) -> bool:
        return any(i.startswith(LOCALISED) for i in self.ids)


def first_line(path: Path) -> str:
    """The first line of the module docstring, or '' when there is none."""
    import ast

    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def student_files(kata: Kata) -> list[tuple[str, Path]]:
    folder = STUDENTS / kata.id
    return [(kind, path) for kind in ("right", "wrong") for path in sorted((folder / kind).glob("*.py"))]


def judge(kata: Kata, kind: str, path: Path, result: KataResult, reviews: dict) -> Graded:
    diagnoses: dict[str, str] = {}
    for check in result.checks:
        for d in check.diagnoses:
            diagnoses.setdefault(d["id"], d.get("explanation", ""))
    name = f"{kata.id}/{kind}/{path.name}"
    graded = Graded(kata.id, kind, name, first_line(path), result.outcome, result.points, result.max_points,
                    result.seconds, [{"id": i, "explanation": e} for i, e in sorted(diagnoses.items())],
                    [c.title for c in result.checks if not c.passed])
    apply_review(graded, reviews)
    if graded.outcome != PASSED and not result.checks:
        graded.failing = [result.message.splitlines()[0] if result.message else graded.outcome]
    return graded


def tasks_of(katas: list[Kata]) -> list[tuple[Kata, str, Path]]:
    """Every student file of `katas` as (kata, kind, path), in the order the queue takes them (the capstone's
    first: its runs are the longest)."""
    return [(kata, kind, path) for kata in queue_order(katas) for kind, path in student_files(kata)]


def apply_review(graded: Graded, reviews: dict) -> None:
    """A wrong file's judgement from review.toml, if it was made on the diagnoses the file has now."""
    graded.review, graded.why = "", ""
    if graded.kind == "wrong" and graded.diagnoses:
        review = reviews.get(graded.name)
        if review and sorted(review.get("diagnoses", [])) == graded.ids and review.get("verdict") in VERDICTS:
            graded.review, graded.why = review["verdict"], review.get("why", "")
        else:
            graded.review = "unreviewed"


def load_reviews() -> dict:
    return tomllib.loads(REVIEW.read_text(encoding="utf-8")) if REVIEW.exists() else {}


def replay(path: Path) -> tuple[list[Graded], float]:
    """The files of an earlier `--json` run, judged again with today's review.toml (nothing is graded)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    names = {f.name for f in fields(Graded)}
    graded = [Graded(**{k: v for k, v in f.items() if k in names}) for f in data["files"]]
    reviews = load_reviews()
    for g in graded:
        apply_review(g, reviews)
    return graded, data["wall_seconds"]


def grade(course: Course, tasks: list[tuple[Kata, str, Path]], jobs: int, reviews: dict | None = None) -> list[Graded]:
    """Grade each (kata, kind, path) through one queue of `jobs` warm zygotes; `reviews` defaults to review.toml."""
    if reviews is None:
        reviews = load_reviews()
    warm_imports = tasks[0][0].warm_imports if tasks else ()
    with open_pool(course, jobs, warm_imports=warm_imports) as pool, \
            ThreadPoolExecutor(max_workers=max(1, jobs)) as threads:
        # A wrong file settles early, as a planted mistake does in `kata verify`: once a check has failed, the
        # `verdict_only` checks (the capstone's training), which name no mistake, are skipped.
        futures = [threads.submit(run_kata, course, kata, path, seed=0, devices="all", pool=pool,
                                  runs_at_once=jobs, settle_early=kind == "wrong") for kata, kind, path in tasks]
        graded = []
        for (kata, kind, path), future in zip(tasks, futures, strict=True):
            graded.append(judge(kata, kind, path, future.result(), reviews))
            print(f"[{len(graded)}/{len(tasks)}] {graded[-1].name}: {graded[-1].outcome}", file=sys.stderr, flush=True)
    rank = {kata.id: i for i, kata in enumerate(course.katas)}
    return sorted(graded, key=lambda g: (rank[g.kata], g.kind, g.name))


def summary(graded: list[Graded]) -> dict:
    right = [g for g in graded if g.kind == "right"]
    wrong = [g for g in graded if g.kind == "wrong"]
    reviewed = {v: sum(g.review == v for g in wrong) for v in (*VERDICTS, "unreviewed")}
    return {"right": len(right), "right_full_marks": sum(g.full_marks and not g.diagnoses for g in right),
            "wrong": len(wrong), "caught": sum(not g.full_marks for g in wrong),
            "named": sum(g.named for g in wrong), "localised": sum(g.localised for g in wrong),
            "diagnosis_right": reviewed["right"], "diagnosis_wrong": reviewed["wrong"],
            "diagnosis_none": reviewed["none"], "diagnosis_unreviewed": reviewed["unreviewed"],
            "diagnosis_absent": sum(not g.diagnoses for g in wrong)}


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "0/0"


def report(graded: list[Graded], katas: list[Kata], wall: float) -> None:
    header = (f"{'kata':<26}{'right ok':>10}{'wrong':>7}{'caught':>8}{'named':>7}{'localised':>11}"
              f"{'diag right':>12}{'diag wrong':>12}{'none':>6}{'absent':>8}{'unrev.':>8}")
    rows = []
    for kata in katas:
        mine = [g for g in graded if g.kata == kata.id]
        if not mine:
            continue
        s = summary(mine)
        rows.append(f"{kata.id + ' ' + kata.slug:<26}{str(s['right_full_marks']) + '/' + str(s['right']):>10}"
                    f"{s['wrong']:>7}{s['caught']:>8}{s['named']:>7}{s['localised']:>11}{s['diagnosis_right']:>12}"
                    f"{s['diagnosis_wrong']:>12}{s['diagnosis_none']:>6}{s['diagnosis_absent']:>8}"
                    f"{s['diagnosis_unreviewed']:>8}")
        print(f"\n== {kata.id} {kata.title}")
        for g in mine:
            if g.kind == "right":
                mark = "ok" if g.full_marks and not g.diagnoses else "FALSE ALARM"
            else:
                mark = "PASSED (not caught)" if g.full_marks else "caught"
            print(f"  [{g.kind}] {Path(g.name).name}: {mark}, {g.outcome}, {g.points:g}/{g.max_points:g} points"
                  f", {g.seconds:.1f} s" + (f", review: {g.review}" if g.review else ""))
            print(f"      {g.what}")
            if g.kind == "right" and g.failing:
                print(f"      failing: {'; '.join(g.failing[:4])}")
            for d in g.diagnoses:
                print(f"      - {d['id']}: {' '.join(d['explanation'].split())}")
            if g.why:
                print(f"      review: {g.why}")
    s = summary(graded)
    print(f"\n{header}\n" + "\n".join(rows))
    print(f"{'all':<26}{str(s['right_full_marks']) + '/' + str(s['right']):>10}{s['wrong']:>7}{s['caught']:>8}"
          f"{s['named']:>7}{s['localised']:>11}{s['diagnosis_right']:>12}{s['diagnosis_wrong']:>12}"
          f"{s['diagnosis_none']:>6}{s['diagnosis_absent']:>8}{s['diagnosis_unreviewed']:>8}")
    wrong = s["wrong"]
    print(f"\nright files with full marks and no diagnosis: {_share(s['right_full_marks'], s['right'])}")
    print(f"wrong files caught: {_share(s['caught'], wrong)}, named: {_share(s['named'], wrong)}, "
          f"localised: {_share(s['localised'], wrong)}")
    print(f"wrong files' diagnoses: right {_share(s['diagnosis_right'], wrong)}, wrong "
          f"{_share(s['diagnosis_wrong'], wrong)}, neither {_share(s['diagnosis_none'], wrong)}, absent "
          f"{_share(s['diagnosis_absent'], wrong)}, unreviewed {_share(s['diagnosis_unreviewed'], wrong)}")
    kept = [g for g in graded if g.kind == "wrong" and g.full_marks]
    for title, rows_ in (("wrong files that kept full marks", kept),
                         ("right files that lost points or got a diagnosis",
                          [g for g in graded if g.kind == "right" and not (g.full_marks and not g.diagnoses)]),
                         ("wrong diagnoses (review)", [g for g in graded if g.review == "wrong"])):
        print(f"\n{title}: {len(rows_)}")
        for g in rows_:
            print(f"  {g.name}: {g.what}" + (f" -> {', '.join(g.ids)}" if g.ids else ""))
    print(f"\n{len(graded)} files graded in {wall:.1f} s wall")


def review_template(graded: list[Graded]) -> str:
    """TOML tables to fill for the wrong files whose diagnoses have no current judgement."""
    out = []
    for g in graded:
        if g.review == "unreviewed":
            out.append(f'["{g.name}"]\nverdict = "?"  # right / wrong / none\ndiagnoses = {json.dumps(g.ids)}\n'
                       f'why = ""  # {g.what}\n')
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("katas", nargs="*", help="kata ids or slugs (default: every kata)")
    parser.add_argument("--jobs", type=int, default=2, help="files graded at once (default 2)")
    parser.add_argument("--json", action="store_true", help="print every file's result as JSON")
    parser.add_argument("--review-template", action="store_true",
                        help="print review.toml tables to fill for the unreviewed diagnoses")
    parser.add_argument("--replay", type=Path, metavar="JSON",
                        help="report an earlier --json run again, with today's review.toml, instead of grading")
    args = parser.parse_args(argv)
    course = load_course(REPO)
    katas = [course.find(k) for k in args.katas] if args.katas else list(course.katas)
    katas = [k for k in course.katas if k in katas]  # course order
    if args.replay:
        graded, wall = replay(args.replay)
        graded = [g for g in graded if g.kata in {k.id for k in katas}]
    else:
        started = time.perf_counter()
        graded = grade(course, tasks_of(katas), args.jobs)
        wall = time.perf_counter() - started
    if args.json:
        print(json.dumps({"wall_seconds": round(wall, 1), "summary": summary(graded),
                          "files": [asdict(g) | {"full_marks": g.full_marks, "named": g.named,
                                                 "localised": g.localised} for g in graded]}, indent=1))
    elif args.review_template:
        print(review_template(graded))
    else:
        report(graded, katas, wall)
    return 0


if __name__ == "__main__":
    sys.exit(main())
