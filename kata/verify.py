"""`kata verify`: proof that the course is sound, for course authors and CI.

For each kata: the committed stub is the one derived from the solution; the reference solution passes
every check under several seeds; the derived stub imports and fails every check as not implemented;
every planted mistake (`graders/<kata>/mistakes/*.py`, at least three) fails and triggers the
diagnosis it declares; every correct-but-different implementation (`graders/<kata>/alternatives/*.py`,
at least four) passes with full marks; and no diagnosis fires where it should not: on an alternative,
on the reference, or on a planted mistake that does not list it. Every run stays inside the kata's
time budget. Each run is graded on every device torch sees; the report says whether the passing runs
(references, alternatives) were graded on CUDA too, and on which GPU, or that CUDA was not verified.
A planted mistake that expects a diagnosis settles early: once one of its checks has failed, the checks
marked `verdict_only` are skipped (the capstone's training, the course's slowest check). Such a check
names no mistake (the plugin refuses a diagnosis from it), so it could change nothing verify concludes
about a mistake already caught: that it was caught, and which diagnoses it was given. References,
alternatives, a mistake that expects an outcome (a timeout, say: a skipped check could have been the one
to end that way) and a mistake no earlier check caught run every check.
Without a GPU, the CPU also runs the checks written for CUDA's dtypes (half precision, whose kernels round
as CUDA's do): their tolerances and diagnoses are tried on every machine, though not on CUDA itself.
The grading child reports every diagnosis id its grader modules define; those with no planted mistake
written for them (and named by it) are `uncovered`, a problem.

A planted mistake holds only the definitions it changes and a header naming what it must trigger:

    \"\"\"Planted mistake: no max subtraction.\"\"\"
    # expect: no-max-subtraction
    # also: wrong-normaliser

It is graded as the solution with the mistake appended (later definitions win), so it never
repeats the rest of the solution. `expect` names the diagnosis written for it (or a kata outcome:
`forbidden`, `timeout`, `crash`, ...); `also` lists the other diagnoses it rightly triggers. Any other
diagnosis is a false one: a claim about the student's code that is not true of it. An alternative is
stored the same way, with no `expect` line.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from kata.course import Course, Kata
from kata.pool import open_pool
from kata.runner import NOT_IMPLEMENTED, OUTCOMES, PASSED, KataResult, run_kata
from kata.scaffold import TODO, todos
from kata.stubs import StubError, count_regions, derive_stub

SEEDS = (0, 1, 2)
MIN_MISTAKES = 3
MIN_ALTERNATIVES = 4
MIN_HINTS = 3
_EXPECT = re.compile(r"^#\s*expect:\s*(\S+)\s*$", re.MULTILINE)
_ALSO = re.compile(r"^#\s*also:\s*(.+?)\s*$", re.MULTILINE)


@dataclass
class Run:
    """One grading run made by verify and what it had to show."""

    kind: str  # "reference", "stub", "mistake" or "alternative"
    name: str
    expected: str
    outcome: str
    seconds: float
    ok: bool
    detail: str = ""
    diagnoses: list[str] = field(default_factory=list)  # every diagnosis the run's checks gave
    named: bool = False  # a mistake: its own diagnosis (or outcome) was given
    false_diagnoses: list[str] = field(default_factory=list)  # given, but not true of the code
    devices: list[str] = field(default_factory=list)  # where its checks ran: cpu, and cuda when torch saw a GPU
    cuda_device: str | None = None  # the GPU torch saw, if any
    cuda_checks_on_cpu: bool = False  # no GPU: the checks of CUDA's dtypes (half precision) ran on the CPU
    points: float = 0.0  # what the run earned (not the grade of a mistake that settled early: it skipped checks)


@dataclass
class KataReport:
    kata: str
    title: str
    problems: list[str] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    diagnoses: list[str] = field(default_factory=list)  # every diagnosis id the kata's graders define

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def slowest(self) -> float:
        return max((r.seconds for r in self.runs), default=0.0)

    @property
    def uncovered(self) -> list[str]:
        """The diagnoses no planted mistake is written for and named by: never shown to fire as meant."""
        covered = {r.expected for r in self.runs if r.kind == "mistake" and r.named}
        return [d for d in self.diagnoses if d not in covered]

    @property
    def passing(self) -> list[Run]:
        """The runs that must pass with full marks: the references and the alternatives."""
        return [r for r in self.runs if r.kind in ("reference", "alternative")]

    @property
    def cuda_verified(self) -> bool:
        """Every run that must pass passed on CUDA as well as on the CPU."""
        passing = self.passing
        return bool(passing) and all("cuda" in r.devices for r in passing)

    @property
    def cuda_devices(self) -> list[str]:
        return sorted({r.cuda_device for r in self.runs if r.cuda_device and "cuda" in r.devices})

    def counts(self) -> dict[str, int]:
        """Mistakes caught and named by their own diagnosis, false diagnoses, alternatives passing."""
        mistakes = [r for r in self.runs if r.kind == "mistake"]
        alternatives = [r for r in self.runs if r.kind == "alternative"]
        return {"mistakes": len(mistakes), "caught": sum(r.outcome != PASSED for r in mistakes),
                "named": sum(r.named for r in mistakes),
                "false_diagnoses": sum(len(r.false_diagnoses) for r in self.runs),
                "alternatives": len(alternatives), "alternatives_passing": sum(r.ok for r in alternatives),
                "diagnoses": len(self.diagnoses), "covered": len(self.diagnoses) - len(self.uncovered)}

    def to_dict(self) -> dict:
        return {"kata": self.kata, "title": self.title, "ok": self.ok, "problems": self.problems,
                "slowest_seconds": round(self.slowest, 3), **self.counts(),
                "cuda_verified": self.cuda_verified, "cuda_devices": self.cuda_devices,
                "diagnoses_defined": self.diagnoses, "uncovered": self.uncovered,
                "runs": [vars(r) | {"seconds": round(r.seconds, 3)} for r in self.runs]}


def mistake_expectation(source: str) -> str | None:
    match = _EXPECT.search(source)
    return match.group(1) if match else None


def also_expected(source: str) -> set[str]:
    """The diagnoses a planted mistake lists as rightly triggered besides its own (`# also: a b`)."""
    return {d for match in _ALSO.finditer(source) for d in match.group(1).replace(",", " ").split()}


def with_mistake(solution: str, mistake: str, name: str, kind: str = "planted mistake") -> str:
    return f"{solution.rstrip()}\n\n\n# ---- {kind}: {name} ----\n{mistake}"


def _diagnoses(result: KataResult) -> list[str]:
    return sorted({d["id"] for c in result.checks for d in c.diagnoses})


def _judge_passing(result: KataResult, kind: str, name: str) -> Run:
    """A file that must pass every check with full marks and no diagnosis: the reference, an alternative."""
    failing = [c for c in result.checks if not c.passed]
    found = _diagnoses(result)
    ok = result.outcome == PASSED and result.points == result.max_points and not found
    detail = "; ".join(f"{c.title}: {c.status}: {c.message.splitlines()[0] if c.message else ''}"
                       for c in failing[:3]) or result.message
    if found:
        detail = f"diagnosed {found}" + (f"; {detail}" if failing else "")
    if result.outcome != PASSED and result.log and not failing:
        detail += "\n" + result.log[-1500:]
    return Run(kind, name, PASSED, result.outcome, result.seconds, ok, "" if ok else detail,
               diagnoses=found, false_diagnoses=found, points=result.points)


def _judge_reference(result: KataResult, seed: int) -> Run:
    return _judge_passing(result, "reference", f"solution (seed {seed})")


def _judge_alternative(result: KataResult, name: str) -> Run:
    return _judge_passing(result, "alternative", name)


def _judge_stub(result: KataResult) -> Run:
    wrong = [c for c in result.checks if c.status != NOT_IMPLEMENTED]
    ok = result.outcome == NOT_IMPLEMENTED and not wrong
    detail = "" if ok else ("; ".join(f"{c.title}: {c.status}" for c in wrong[:3]) or result.message)
    return Run("stub", "derived stub", NOT_IMPLEMENTED, result.outcome, result.seconds, ok, detail)


def _judge_mistake(result: KataResult, name: str, expected: str, also: set[str]) -> Run:
    found = _diagnoses(result)
    named = result.outcome != PASSED and (expected == result.outcome or expected in found)
    false = [d for d in found if d != expected and d not in also]
    # A planted mistake is the whole solution plus the mistake: no stub's raise is left in it, so a check that says
    # "not implemented yet" took an error of its code (torch's own NotImplementedError) for the stub.
    stub_claimed = [c.title for c in result.checks if c.status == NOT_IMPLEMENTED and expected != NOT_IMPLEMENTED]
    ok = named and not false and not stub_claimed
    if stub_claimed:
        detail = f"reported as not implemented yet, though no stub is left: {'; '.join(stub_claimed[:3])}"
    elif not named:
        detail = (f"expected {expected!r}; outcome {result.outcome}, diagnoses {found or 'none'}"
                  + (f": {result.message}" if result.outcome != PASSED else ""))
    else:
        detail = "" if ok else (f"false diagnoses {false}: not true of this mistake (list a right one "
                                "under '# also:')")
    return Run("mistake", name, expected, result.outcome, result.seconds, ok, detail,
               diagnoses=found, named=named, false_diagnoses=false, points=result.points)


@dataclass
class _Task:
    """One grading run to make: the file, how to judge its result, and how to grade it."""

    file: Path
    judge: Callable[[KataResult], Run]
    seed: int = 0
    # A planted mistake's run: its verdict and diagnoses are settled once a check fails, so the checks that
    # name no mistake (`verdict_only`, the capstone's training) are skipped after that.
    settle_early: bool = False


@dataclass
class _Plan:
    """A kata's report so far (its static problems) and the grading runs that will finish it."""

    kata: Kata
    report: KataReport
    tasks: list[_Task] = field(default_factory=list)
    futures: list[Future[KataResult]] = field(default_factory=list)  # its runs, once queued, in the tasks' order


def _plan(kata: Kata, course: Course, tmp: Path, seeds: tuple[int, ...]) -> _Plan:
    """Check a kata's files, and write the files its runs grade into `tmp`."""
    plan = _Plan(kata, KataReport(kata.id, kata.title))
    report = plan.report
    solution = kata.solution.read_text(encoding="utf-8")
    try:
        stub = derive_stub(solution, filename=str(kata.solution))
    except StubError as exc:
        report.problems.append(str(exc))
        return plan
    if count_regions(solution) == 0:
        report.problems.append(f"{kata.solution}: no ### BEGIN SOLUTION region: the stub would be the solution")
    if kata.exercise.read_text(encoding="utf-8") != stub:
        report.problems.append(f"{kata.exercise} is not the stub derived from {kata.solution.name} "
                               "(`kata stubs --write` regenerates it)")
    report.problems += [f"{where}: {TODO} left" for where in todos(course, kata)]
    if len(kata.hints) < MIN_HINTS:
        report.problems.append(f"course.toml: kata {kata.id}: {len(kata.hints)} hint tiers, want {MIN_HINTS}")
    mistakes = kata.mistakes()
    if len(mistakes) < MIN_MISTAKES:
        report.problems.append(f"{kata.mistakes_dir}: {len(mistakes)} planted mistakes, want at least {MIN_MISTAKES}")
    alternatives = kata.alternatives()
    if len(alternatives) < MIN_ALTERNATIVES:
        report.problems.append(f"{kata.alternatives_dir}: {len(alternatives)} alternatives, want at least "
                               f"{MIN_ALTERNATIVES}")

    tmp.mkdir()
    plan.tasks += [_Task(kata.solution, lambda r, s=seed: _judge_reference(r, s), seed) for seed in seeds]
    stub_file = tmp / "exercise.py"
    stub_file.write_text(stub, encoding="utf-8")
    plan.tasks.append(_Task(stub_file, _judge_stub))
    for path in mistakes:
        source = path.read_text(encoding="utf-8")
        expected = mistake_expectation(source)
        if expected is None:
            report.problems.append(f"{path}: no '# expect: <diagnosis or outcome>' line")
            continue
        combined = tmp / f"mistake_{path.stem}.py"
        combined.write_text(with_mistake(solution, source, path.name), encoding="utf-8")
        judge = partial(_judge_mistake, name=path.name, expected=expected, also=also_expected(source))
        plan.tasks.append(_Task(combined, judge, settle_early=expected not in OUTCOMES))
    for path in alternatives:
        combined = tmp / f"alternative_{path.stem}.py"
        combined.write_text(with_mistake(solution, path.read_text(encoding="utf-8"), path.name, "alternative"),
                            encoding="utf-8")
        plan.tasks.append(_Task(combined, partial(_judge_alternative, name=path.name)))
    return plan


def _conclude(plan: _Plan, results: list[KataResult]) -> KataReport:
    """Judge each run of the plan (`results` in the order of its tasks) and say what is wrong."""
    report, kata = plan.report, plan.kata
    for task, result in zip(plan.tasks, results, strict=True):
        run = task.judge(result)
        run.devices, run.cuda_device = list(result.devices), result.cuda_device
        run.cuda_checks_on_cpu = result.cuda_checks_on_cpu
        report.runs.append(run)
        report.diagnoses = sorted(set(report.diagnoses) | set(result.known_diagnoses))
    if not any(c.critical for result in results for c in result.checks):
        report.problems.append("no check is marked critical (`@pytest.mark.critical`): a bug that breaks what the "
                               "kata builds would cost only its checks' share of the points (kata.scoring)")
    if report.uncovered:
        report.problems.append(f"no planted mistake is written for (and named by) the diagnoses "
                               f"{', '.join(report.uncovered)}: each diagnosis must be shown to fire as meant")
    for run in report.runs:
        if not run.ok:
            report.problems.append(f"{run.kind} {run.name}: {run.detail}")
        elif run.seconds > kata.time_budget_s:
            report.problems.append(f"{run.kind} {run.name}: took {run.seconds:.1f} s, over the "
                                   f"{kata.time_budget_s:g} s budget")
    return report


def queue_order(katas: list[Kata]) -> list[Kata]:
    """The katas in the order their runs are queued: grouped by the kind of zygote they need (their
    `warm_imports`), the group holding the longest time budget first, and the longest budget first within a
    group (course order among equals)."""
    longest: dict[tuple[str, ...], float] = {}
    for kata in katas:
        longest[kata.warm_imports] = max(longest.get(kata.warm_imports, 0.0), kata.time_budget_s)
    return sorted(katas, key=lambda k: (-longest[k.warm_imports], k.warm_imports, -k.time_budget_s))


def verify_course(course: Course, katas: list[Kata] | None = None, *, jobs: int = 2,
                  seeds: tuple[int, ...] = SEEDS, on_report: Callable[[KataReport], None] | None = None,
                  ) -> list[KataReport]:
    """Every kata (or `katas`), their reports in that order: all their runs through one queue, `jobs` at a
    time, forked from one warm pool of zygotes (`kata.pool`; none with KATA_POOL=0, and every run starts
    cold). `on_report` is given each kata's report as soon as its last run is judged.

    One queue for the whole course, not kata after kata: no job waits for a kata's last run before the
    next kata starts. The katas with the longest time budget go first (the capstone, whose runs train a
    Transformer), so that the short runs of the others fill both jobs to the end; and the katas whose
    zygotes import the same `warm_imports` go together, so that each kind of zygote starts `jobs` times
    only (a run of another kind replaces one)."""
    katas = list(katas or course.katas)
    order = queue_order(katas)
    with tempfile.TemporaryDirectory(prefix="kata-verify-") as tmp, \
            open_pool(course, jobs, warm_imports=order[0].warm_imports if order else ()) as pool, \
            ThreadPoolExecutor(max_workers=max(1, jobs)) as threads:
        plans = {kata.id: _plan(kata, course, Path(tmp) / kata.id, seeds) for kata in katas}
        for plan in (plans[kata.id] for kata in order):
            plan.futures = [threads.submit(run_kata, course, plan.kata, task.file, seed=task.seed, devices="all",
                                          pool=pool, runs_at_once=jobs, cuda_checks_on_cpu=True,
                                          settle_early=task.settle_early)
                            for task in plan.tasks]
        waiting = list(plans.values())

        def conclude_finished() -> None:
            for plan in [p for p in waiting if all(f.done() for f in p.futures)]:
                waiting.remove(plan)
                _conclude(plan, [f.result() for f in plan.futures])  # a run that raised ends it all here
                if on_report:
                    on_report(plan.report)

        try:
            conclude_finished()  # a kata with no runs (its stub could not be derived)
            for _ in as_completed([f for plan in plans.values() for f in plan.futures]):
                conclude_finished()
        except BaseException:  # Ctrl-C, a run that raised: the queued runs never start, the pool ends the others
            threads.shutdown(wait=False, cancel_futures=True)
            raise
    return [plan.report for plan in plans.values()]


def verify_kata(course: Course, kata: Kata, *, jobs: int = 2, seeds: tuple[int, ...] = SEEDS) -> KataReport:
    """One kata: `verify_course` of it alone."""
    return verify_course(course, [kata], jobs=jobs, seeds=seeds)[0]
