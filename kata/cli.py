"""The `kata` command. Each command parses its options, calls the layer that does the work, and hands
the result to `kata.render` (or prints JSON). Exit codes: `kata.outcomes` and docs/students.md.

`kata check` starts fast because this module imports little: torch never (the grading child does), and
`kata.render` (rich) only when a command prints with it (`cli_shared.render`)."""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import click
from rich_click import RichGroup, RichHelpConfiguration, rich_config

from kata import __version__, runner, scaffold, workspace
from kata import progress as prog
from kata.capstone import TASK, TASKS
from kata.cli_shared import UsageError, check_report, emit, find_kata, json_option, open_course, render, select_katas
from kata.course import Course, Kata
from kata.cpus import usable_cpus
from kata.nbgrader.cli import nbgrader_group, notebook_command
from kata.outcomes import EXIT_INTERRUPTED
from kata.stubs import stale_stubs, strip_markers
from kata.viz.cli import viz_command


def _kata(course: Course, key: str | None, states: dict | None = None) -> Kata:
    """The kata named by `key`; without one, the kata whose folder the shell is in, else the current one."""
    if key is None:
        here = course.kata_at(Path.cwd())
        if here is not None:
            return here
        progress = _progress(course)
        states = states if states is not None else progress.load()
        found = prog.current_kata(course.katas, states, progress.current())
        if found is None:
            raise UsageError("every kata is passed or skipped: name one, e.g. `kata check 9.1`")
        return found
    return find_kata(course, key)


def _progress(course: Course) -> prog.Progress:
    return prog.Progress(prog.progress_path(course.root))


def _kata_dict(kata: Kata, state: prog.KataProgress | None = None, changed: set[str] | None = None) -> dict:
    """A kata in a `--json` report; with its `state`, and `changed` (`prog.changed_since_pass`), whether its
    file changed since it passed."""
    data = {"id": kata.id, "slug": kata.slug, "title": kata.title, "points": kata.points,
            "requires": list(kata.requires), "exercise": str(kata.exercise), "hint_tiers": len(kata.hints),
            "time_budget_s": kata.time_budget_s}
    if state is not None:
        data["progress"] = vars(state)
    if changed is not None:
        data["file_changed_since_pass"] = kata.id in changed
    return data


def _show_warning(message, category, filename, lineno, file=None, line=None):
    render.warning(message)


# `kata --help` lists the commands by reader, the student's first (rich-click's panels); every command is in one.
COMMAND_PANELS = {
    "For students": ["next", "show", "check", "watch", "hint", "list", "progress", "solution", "skip", "goto", "edit",
                     "reset", "restore", "viz", "train-demo", "notebook", "doctor"],
    "For instructors": ["grade", "gradescope", "classroom", "nbgrader"],
    "For course authors": ["verify", "new", "stubs"],
}


class _KataGroup(RichGroup):
    """The `kata` group: its help groups the commands in panels; its errors and the help of each command stay
    click's plain text, which scripts and the tests read."""

    command_class = click.Command
    group_class = click.Group
    main = click.Group.main


@rich_config(help_config=RichHelpConfiguration(
    command_groups={"kata": [{"name": name, "commands": names} for name, names in COMMAND_PANELS.items()]}))
@click.group("kata", cls=_KataGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kata")
def main() -> None:
    """Build the Transformer of "Attention Is All You Need" from scratch, one graded kata at a time.

    Start with `kata next`; then edit the file it names and run `kata check`.
    """
    warnings.showwarning = _show_warning


@main.command("list")
@json_option
def list_katas(as_json: bool) -> None:
    """Every kata in course order, with your status."""
    course = open_course()
    states = _progress(course).load()
    nxt = prog.next_kata(course.katas, states)
    if as_json:
        changed = prog.changed_since_pass(course.katas, states)
        emit("list", {"katas": [_kata_dict(k, states.get(k.id, prog.KataProgress()), changed) for k in course.katas],
                       "next": nxt.id if nxt else None})
        return
    render.kata_list(render.make_console(), course, states, nxt.id if nxt else None)


@main.command()
@click.argument("kata_id")
@json_option
def show(kata_id: str, as_json: bool) -> None:
    """The kata's README: the concept, the math, your task."""
    course = open_course()
    kata = _kata(course, kata_id)
    state = _progress(course).get(kata.id)
    if as_json:
        emit("show", {"kata": _kata_dict(kata, state), "readme": kata.readme.read_text(encoding="utf-8")})
        return
    render.show(render.make_console(), kata, state, [course.find(k) for k in kata.requires])


@main.command()
@click.argument("kata_id", required=False)
@click.option("--device", type=click.Choice(["cpu", "cuda", "all"]), default="all", show_default=True,
              help="Where to run the checks: all means the CPU, plus CUDA when torch sees a GPU.")
@click.option("--file", "file", type=click.Path(path_type=Path, dir_okay=False),
              help="Grade this file instead of the kata's exercise.py.")
@click.option("--full", is_flag=True,
              help="Every failure in detail, nothing cut (by default the report ends with what fits the screen).")
@click.option("--show-output", is_flag=True,
              help="Show everything your code printed, in passing checks too (it is always captured).")
@click.option("--debug", is_flag=True, help="Also print the grader's own log (for course authors).")
@json_option
def check(kata_id: str | None, device: str, file: Path | None, full: bool, show_output: bool, debug: bool,
          as_json: bool) -> None:
    """Grade your exercise (the kata whose folder you are in, else the current one, when no ID is given).

    Exit code: 0 passed, 1 failed, 2 usage or course error, 3 timeout, 4 crash, 5 internal error.
    """
    course = open_course()
    progress = _progress(course)
    states = progress.load()
    kata = _kata(course, kata_id, states)
    console = None
    try:
        if as_json or not sys.stdout.isatty():
            if not as_json:
                render.import_in_background()  # while the graders run: the report appears as soon as they finish
            result = runner.run_kata(course, kata, file, devices=device)
        else:
            console = render.make_console()
            with render.CheckProgress(console, kata) as live:
                result = runner.run_kata(course, kata, file, devices=device, on_event=live.event)
    except KeyboardInterrupt:
        render.check_interrupted()
        sys.exit(EXIT_INTERRUPTED)
    unrecorded = runner.not_recorded(kata, result, device)
    if unrecorded is None:
        progress.record_check(kata.id, result.passed, Path(result.file))
    unmet = prog.unmet(course.prerequisites(kata), states)
    if as_json:
        emit("check", check_report(result, unmet, recorded=unrecorded is None, log=debug))
    else:
        console = console or render.make_console()
        render.check_result(console, course, kata, result, unmet, progress.get(kata.id).hints_used,
                            show_output=show_output, full=full)
        render.not_recorded(console, result, unrecorded)
        if debug:
            render.debug_log(console, result)
    sys.exit(result.exit_code)


@main.command()
@click.argument("kata_id", required=False)
@json_option
def hint(kata_id: str | None, as_json: bool) -> None:
    """Reveal the next hint: concept, then approach, then near-solution."""
    course = open_course()
    progress = _progress(course)
    kata = _kata(course, kata_id)
    tier = min(progress.get(kata.id).hints_used + 1, len(kata.hints))
    progress.record_hint(kata.id, tier)
    shown = list(kata.hints[:tier])
    if as_json:
        emit("hint", {"kata": kata.id, "tier": tier, "tiers": len(kata.hints), "hints": shown})
        return
    render.hint(render.make_console(), kata, tier, shown)


@main.command()
@click.argument("kata_id")
@click.option("--yes", "-y", is_flag=True, help="Do not ask before revealing an unpassed kata's solution.")
@json_option
def solution(kata_id: str, yes: bool, as_json: bool) -> None:
    """Show the reference solution (asks first if you have not passed the kata)."""
    course = open_course()
    progress = _progress(course)
    kata = _kata(course, kata_id)
    passed = progress.get(kata.id).status == prog.PASSED
    if not passed and not yes:
        if as_json:
            raise UsageError(f"kata {kata.id} is not passed yet: add --yes to reveal its solution anyway")
        if not click.confirm(f"Kata {kata.id} is not passed yet. Reveal the reference solution?", default=False):
            render.solution_not_revealed(render.make_console())
            return
    if not passed:
        progress.record_solution_revealed(kata.id)
    source = strip_markers(kata.solution.read_text(encoding="utf-8"))
    if as_json:
        emit("solution", {"kata": kata.id, "file": str(kata.solution), "source": source, "recorded": not passed})
        return
    render.solution(render.make_console(), kata, source)


@main.command()
@click.argument("kata_id", required=False)
@click.option("--all", "every", is_flag=True,
              help="Every kata: all your files (and the progress file) go to one backup folder first.")
@json_option
def reset(kata_id: str | None, every: bool, as_json: bool) -> None:
    """Put the stub back (your file is backed up first)."""
    course = open_course()
    if every:
        if kata_id is not None:
            raise UsageError("give a kata ID or --all, not both")
        done = workspace.reset_all(course, prog.progress_path(course.root))
        if as_json:
            emit("reset", {"all": True, "backup": done.folder, "katas": [vars(c) for c in done.changes]})
            return
        render.reset_all(render.make_console(), done)
        return
    if kata_id is None:
        raise UsageError("name the kata to reset (`kata reset 9.2`), or --all")
    kata = _kata(course, kata_id)
    change = workspace.reset(course, kata)
    if as_json:
        emit("reset", vars(change))
        return
    render.change(render.make_console(), "Reset", kata, change.changed, change.backup)


@main.command()
@click.argument("kata_id")
@click.option("--from", "source", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="The backup to restore (default: the newest).")
@json_option
def restore(kata_id: str, source: Path | None, as_json: bool) -> None:
    """Bring back your file from the newest backup (undoes `kata reset`)."""
    course = open_course()
    kata = _kata(course, kata_id)
    try:
        change = workspace.restore(course, kata, source)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    if as_json:
        emit("restore", vars(change))
        return
    render.change(render.make_console(), "Restored", kata, change.changed, change.backup, change.restored_from)


@main.command()
@click.argument("kata_id", required=False)
@json_option
def skip(kata_id: str | None, as_json: bool) -> None:
    """Skip a kata for now: recorded as skipped, not passed; `kata next` and watch move on."""
    course = open_course()
    progress = _progress(course)
    kata = _kata(course, kata_id or progress.current())
    entry = progress.record_skip(kata.id)
    states = progress.load()
    following = prog.next_kata(course.katas, states)
    progress.set_current(following.id if following else None)
    if as_json:
        emit("skip", {"kata": kata.id, "status": entry.status, "next": following.id if following else None})
        return
    render.skipped(render.make_console(), kata, entry.status, following)


@main.command()
@click.argument("kata_id")
@json_option
def goto(kata_id: str, as_json: bool) -> None:
    """Make a kata the current one: `kata watch` (and `kata check`, `hint`, `edit` without an ID) start there."""
    course = open_course()
    kata = _kata(course, kata_id)
    _progress(course).set_current(kata.id)
    if as_json:
        emit("goto", {"kata": _kata_dict(kata)})
        return
    render.current_kata(render.make_console(), kata)


@main.command()
@click.argument("kata_id", required=False)
def edit(kata_id: str | None) -> None:
    """Open the kata's exercise in your editor ($EDITOR, else $VISUAL, else nano, vim or vi)."""
    course = open_course()
    progress = _progress(course)
    kata = _kata(course, kata_id or progress.current())
    from kata import editor

    try:
        code = editor.edit(kata.exercise)
    except editor.EditorError as exc:
        raise UsageError(str(exc)) from None
    sys.exit(0 if code == 0 else 1)


@main.command()
@click.argument("kata_id", required=False)
@click.option("--poll", is_flag=True,
              help="Look for saves every half second instead of waiting for file-system events (WSL mounts, "
                   "network drives, some containers send none).")
@click.option("--device", type=click.Choice(["cpu", "cuda", "all"]), default="all", show_default=True,
              help="Where to run the checks.")
def watch(kata_id: str | None, poll: bool, device: str) -> None:
    """Check the current kata every time you save it; keys: n next, h hint, l list, o output, c check, q quit."""
    from kata.watch import Watcher

    course = open_course()
    progress = _progress(course)
    start = _kata(course, kata_id) if kata_id else None
    sys.exit(Watcher(course, progress, start=start, poll=poll, device=device).run())


@main.command("train-demo")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the initial weights, the training batches and the held-out sequences.")
@click.option("--steps", type=click.IntRange(min=1), default=None,
              help="Training steps at most (default: the task's).")
@click.option("--task", "task_name", type=click.Choice(list(TASKS)), default=TASK.name, show_default=True,
              help="The capstone task: " + "; ".join(f"{t.name}: {t.about}" for t in TASKS.values()) + ".")
@json_option
def train_demo_command(seed: int, steps: int | None, task_name: str, as_json: bool) -> None:
    """Watch your own Transformer learn a capstone task, trained by your own code of the capstone kata.

    Exit code: 0 when it reached the task's accuracy, 1 otherwise (or when a piece of yours raised).
    """
    open_course()
    from kata.train_demo import train_demo

    # With --json the live report goes to stderr, so stdout holds the JSON alone.
    summary = train_demo(render.make_console(stderr=as_json), seed=seed, steps=steps, task=task_name)
    reached = summary["ok"] and summary["accuracy"] >= summary["target_accuracy"]
    if as_json:
        emit("train-demo", {**summary, "reached": reached})
    sys.exit(0 if reached else 1)


@main.command("next")
@json_option
def next_kata(as_json: bool) -> None:
    """The kata to work on now."""
    course = open_course()
    states = _progress(course).load()
    kata = prog.next_kata(course.katas, states)
    if as_json:
        emit("next", {"kata": _kata_dict(kata, states.get(kata.id, prog.KataProgress())) if kata else None})
        return
    from kata.doctor import activation_hint

    render.next_kata(render.make_console(), kata, activation_hint())


@main.command("progress")
@json_option
def progress_command(as_json: bool) -> None:
    """Your progress through the course."""
    course = open_course()
    states = _progress(course).load()
    nxt = prog.next_kata(course.katas, states)
    if as_json:
        passed = [k for k in course.katas if states.get(k.id, prog.KataProgress()).status == prog.PASSED]
        changed = prog.changed_since_pass(course.katas, states)
        emit("progress", {
            "passed": len(passed), "total": len(course.katas),
            "points": sum(k.points for k in passed), "max_points": sum(k.points for k in course.katas),
            "next": nxt.id if nxt else None,
            "katas": [_kata_dict(k, states.get(k.id, prog.KataProgress()), changed) for k in course.katas],
            "progress_file": str(prog.progress_path(course.root)),
        })
        return
    render.progress_report(render.make_console(), course, states, nxt.id if nxt else None)


@main.command()
@json_option
def doctor(as_json: bool) -> None:
    """Check the set-up: Python, torch, CUDA and the GPU, where the course and your progress are."""
    from kata import doctor as set_up

    rows = set_up.rows()
    ok = all(row[2] for row in rows)
    if as_json:
        emit("doctor", {"ok": ok, "checks": [{"name": n, "value": v, "ok": good} for n, v, good in rows]})
    else:
        render.doctor(render.make_console(), rows)
    sys.exit(0 if ok else 1)


@main.command()
@click.argument("kata_ids", nargs=-1)
@click.option("--jobs", "-j", type=int, default=None, help="Grading runs at once (default: the CPUs it may use).")
@click.option("--progress", "check_progress", is_flag=True,
              help="Check the progress file instead: every pass must carry the hash of the file that passed.")
@click.option("--regrade", is_flag=True,
              help="With --progress: also grade each passed exercise again (without it, only the files' identity "
                   "is proven).")
@json_option
def verify(kata_ids: tuple[str, ...], jobs: int | None, check_progress: bool, regrade: bool, as_json: bool) -> None:
    """For course authors: prove every kata sound (reference passes, stub and planted mistakes fail).

    The runs are forked from a warm pool of --jobs processes that imported torch once (KATA_POOL=0:
    each starts cold).

    With --progress, for instructors and the wary: prove each pass in the progress file."""
    if check_progress:
        _verify_progress(kata_ids, regrade, as_json)
        return
    from kata.verify import verify_course

    course = open_course()
    katas = [_kata(course, k) for k in kata_ids] or list(course.katas)
    jobs = jobs or usable_cpus()
    started = time.perf_counter()
    console = None if as_json else render.make_console()
    if console:
        by_id = {k.id: k for k in katas}
        with render.verifying(console, katas):
            found = verify_course(course, katas, jobs=jobs,
                                  on_report=lambda report: render.verified(console, by_id[report.kata], report))
    else:
        found = verify_course(course, katas, jobs=jobs)
    reports = list(zip(found, katas, strict=True))
    seconds = time.perf_counter() - started
    ok = all(r.ok for r, _ in reports)
    if as_json:
        emit("verify", {"ok": ok, "seconds": round(seconds, 1), "katas": [r.to_dict() for r, _ in reports]})
    else:
        render.verify_report(console, reports, seconds)
    sys.exit(0 if ok else 1)


def _verify_progress(kata_ids: tuple[str, ...], regrade: bool, as_json: bool) -> None:
    course = open_course()
    progress = _progress(course)
    katas = [_kata(course, k) for k in kata_ids] or list(course.katas)

    def grade(kata: Kata) -> bool:
        return runner.run_kata(course, kata).passed

    checks = prog.verify_passes(katas, progress.load(), grade if regrade else None)
    ok = all(c.ok for c in checks)
    if as_json:
        emit("verify-progress", {"ok": ok, "progress_file": str(progress.path), "regraded": regrade,
                                  "proves": "passing" if regrade else "identity",
                                  "katas": [vars(c) for c in checks]})
    else:
        render.verify_progress(render.make_console(), progress.path, checks, regrade)
    sys.exit(0 if ok else 1)


class _GradeGroup(click.Group):
    """`kata grade SUBMISSIONS ...` grades; `kata grade merge ...` merges shards: a first word that is not a
    subcommand's name, or that names an existing folder, is the class folder."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # "class" (the grading command's hidden name) is what many call the class folder, and a folder could be
        # called "merge": a folder that exists is the class, never a subcommand.
        if not args or args[0] not in self.commands or args[0] == "class" or Path(args[0]).is_dir():
            args = ["class", *args]
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name, command, rest = super().resolve_command(ctx, args)
        return ("" if name == "class" else name), command, rest  # usage reads `kata grade SUBMISSIONS`


class _GradeClassContext(click.Context):
    @property
    def command_path(self) -> str:
        return super().command_path.rstrip()  # `kata grade`, not `kata grade ` (the subcommand has no name)


class _GradeClassCommand(click.Command):
    """`kata grade`'s own command: its usage and help name no subcommand."""

    context_class = _GradeClassContext


def _export_options(function):
    """--format and what the LMS exports need, shared by grading and merging."""
    for option in reversed([
        click.option("--format", "formats", multiple=True, type=click.Choice(["canvas"]),
                     help="Also write an LMS gradebook: canvas (canvas.csv, Canvas's gradebook import)."),
        click.option("--assignment", default=None, metavar="NAME",
                     help="The LMS assignment the grades go to (\"Title (1234)\" for Canvas assignment 1234). "
                          "Default: the course's title."),
        click.option("--per-kata", is_flag=True, help="One LMS column per kata instead of one for their total."),
        click.option("--roster", type=click.Path(path_type=Path, exists=True, dir_okay=False), default=None,
                     help="A CSV of the LMS's students (a Canvas gradebook export will do) mapping folder names "
                          "to LMS ids: see docs/instructors.md."),
        click.option("--absent-blank", is_flag=True,
                     help="Leave the LMS grade of a roster student who handed nothing in blank (the LMS keeps what "
                          "it had) rather than 0."),
    ]):
        function = option(function)
    return function


def _lms_exports(course: Course, state, out: Path, formats: tuple[str, ...], assignment: str | None, per_kata: bool,
                 roster, absent_blank: bool, console) -> None:
    """Write the LMS gradebooks asked for beside the reports (listed in state.reports), and say who on the
    roster handed nothing in."""
    from kata import lms

    if "canvas" in formats:
        state.reports[lms.CANVAS_FILE] = lms.write_canvas(out, state, assignment=assignment or course.title,
                                                          per_kata=per_kata, roster=roster, absent_blank=absent_blank)
        if roster is not None and roster.absent:
            render.absent_from_lms(console, lms.CANVAS_FILE, [who.student for who in roster.absent], absent_blank)


def _read_roster(formats: tuple[str, ...], roster: Path | None, students: list[str], whole_class: bool = True):
    """The roster's match of every student, checked before any grading (so a typo costs no hours)."""
    from kata import grade as grading
    from kata import lms

    if roster is None or not formats:
        return None
    try:
        return lms.match_roster(students, lms.read_roster(roster), whole_class=whole_class)
    except grading.GradeError as exc:
        raise UsageError(str(exc)) from None


_key_file_option = click.option(
    "--key-file", type=click.Path(path_type=Path, exists=True, dir_okay=False), default=None,
    envvar="KATA_GRADE_KEY_FILE", show_envvar=True,
    help="A secret of at least 32 characters (`openssl rand -hex 32 > FILE`), kept outside the output folders, "
         "that signs the journal (and verifies it). The same for every shard and the merge, which need it.")


@main.group(cls=_GradeGroup, invoke_without_command=False)
def grade() -> None:
    """For instructors: grade a class (`kata grade SUBMISSIONS`), or merge shards (`kata grade merge`)."""


@grade.command("class", cls=_GradeClassCommand)
@click.argument("submissions", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where the reports and the journal go. Default: SUBMISSIONS-grades beside SUBMISSIONS.")
@click.option("--katas", "keys", multiple=True, metavar="IDS",
              help="Only these katas (ids or slugs, comma-separated or repeated). Default: every kata.")
@click.option("--student", "students", multiple=True, metavar="NAME", help="Only this student (repeatable).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Grading processes at once (default: the CPUs this process may use, its container's quota "
                   "included).")
@click.option("--restart", is_flag=True,
              help="Grade everything again: the journal of earlier runs is renamed, not deleted.")
@click.option("--shard", "shard_text", default=None, metavar="I/N",
              help="Grade only part I of N (from 0) of the units, by a stable hash of (student, kata); "
                   "`kata grade merge` puts the N output folders together.")
@click.option("--unsafe-no-sandbox", is_flag=True,
              help="Grade without the operating-system sandbox (bubblewrap) where there is none: the students' "
                   "code then runs with your permissions. The reports say so.")
@_key_file_option
@_export_options
@json_option
def grade_class(submissions: Path, out: Path | None, keys: tuple[str, ...], students: tuple[str, ...],
                jobs: int | None, restart: bool, shard_text: str | None, unsafe_no_sandbox: bool,
                key_file: Path | None, formats: tuple[str, ...], assignment: str | None, per_kata: bool,
                roster: Path | None, absent_blank: bool, as_json: bool) -> None:
    """For instructors: grade every student's folder (or .zip) in SUBMISSIONS against the katas.

    Each graded unit runs in a bubblewrap sandbox (`kata doctor` says whether there is one). Writes
    grades.csv, katas.csv, checks.csv and grades.json (and canvas.csv with --format canvas). An
    interrupted run continues where it stopped when run again. `kata grade merge OUT SHARD_DIRS...`
    merges the folders of `--shard` runs. Exit code: 0 every unit graded, 1 some could not be (internal
    errors: run again), 2 usage error (no sandbox, say), 130 interrupted.
    """
    from kata import grade as grading

    course = open_course()
    katas = select_katas(course, keys)
    submissions = submissions.resolve()
    out = (out or submissions.with_name(submissions.name + "-grades")).resolve()
    try:
        shard = grading.Shard.parse(shard_text) if shard_text else None
        key = grading.read_key(key_file, out) if key_file else None
        found = grading.find_submissions(submissions, out / "unpacked", students)
    except grading.GradeError as exc:
        raise UsageError(str(exc)) from None
    if not found:
        raise UsageError(f"no student folders or .zip files in {submissions}")
    # With --student only some are graded: the others on the roster are not absent.
    matched = _read_roster(formats, roster, [s.student for s in found], whole_class=not students)
    console = render.make_console(stderr=as_json)
    grading.interrupt_on("SIGTERM", "SIGHUP")
    try:
        with render.GradeProgress(console) as bar:
            state = grading.grade_class(course, found, katas, out, jobs=jobs or usable_cpus(), restart=restart,
                                        on_start=bar.start, on_result=bar.result, shard=shard,
                                        unsafe_no_sandbox=unsafe_no_sandbox, key=key)
    except grading.GradeError as exc:
        raise UsageError(str(exc)) from None
    _lms_exports(course, state, out, formats, assignment, per_kata, matched, absent_blank, console)
    if as_json:
        emit("grade", {**grading.report_json(state), "out": str(out)})
    else:
        render.grade_summary(console, state, state.reports, out)
    sys.exit(EXIT_INTERRUPTED if state.interrupted else 1 if state.internal_errors else 0)


@grade.command("merge")
@click.argument("out", type=click.Path(path_type=Path, file_okay=False))
@click.argument("shard_dirs", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True, file_okay=False))
@_key_file_option
@_export_options
@json_option
def grade_merge(out: Path, shard_dirs: tuple[Path, ...], key_file: Path | None, formats: tuple[str, ...],
                assignment: str | None, per_kata: bool, roster: Path | None, absent_blank: bool,
                as_json: bool) -> None:
    """Put together the output folders of `kata grade --shard I/N --key-file KEY` (all N of them) into OUT:
    the usual reports, and one journal that `kata grade SUBMISSIONS --out OUT --key-file KEY` goes on from.
    Each shard's journal is verified with KEY (the shards' own folders hold no key to trust).

    Exit code: 0 every unit graded, 1 some were not (a shard interrupted, or internal errors: grade
    that shard again and merge again), 2 the folders are not the N shards of one class, or a shard's
    journal holds lines not signed with KEY.
    """
    from kata import grade as grading
    from kata.shard import merge_shards

    course = open_course()
    out = out.resolve()
    try:
        key = grading.read_key(key_file, out, *shard_dirs) if key_file else None
        state = merge_shards(course, out, [d.resolve() for d in shard_dirs], key)
    except grading.GradeError as exc:
        raise UsageError(str(exc)) from None
    console = render.make_console(stderr=as_json)
    _lms_exports(course, state, out, formats, assignment, per_kata,
                 _read_roster(formats, roster, [s.student for s in state.submissions]), absent_blank, console)
    if as_json:
        emit("grade", {**grading.report_json(state), "out": str(out)})
    else:
        render.grade_summary(console, state, state.reports, out)
    sys.exit(0 if state.complete and not state.internal_errors else 1)


@main.group()
def gradescope() -> None:
    """For instructors: Gradescope autograders of the katas (see docs/instructors.md)."""


@gradescope.command("build")
@click.argument("out", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--katas", "keys", multiple=True, metavar="IDS",
              help="The katas of the assignment (ids or slugs, comma-separated or repeated). Default: every kata.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=None,
              help="The assignment's autograder timeout in seconds (default: Gradescope's, 600): the build is "
                   "refused when the katas' time budgets could add up past it.")
@click.option("--allow-over-timeout", is_flag=True,
              help="Build even when the katas' time budgets could add up past --timeout (a warning instead).")
@click.option("--visibility", "visibility", multiple=True, metavar="[KATA[:CHECK]=]LEVEL",
              help="When the details of checks reach the student: visible (default), after_due_date, "
                   "after_published or hidden, for every check, a kata's or a check's (a test function of its "
                   "graders, or a pattern: 9.2:test_grad*); the student always sees at once whether it passed. "
                   "Repeatable; the most specific applies.")
def gradescope_build(out: Path, keys: tuple[str, ...], timeout_s: float | None, allow_over_timeout: bool,
                     visibility: tuple[str, ...]) -> None:
    """Write OUT (a .zip) to upload as a Gradescope assignment's autograder: setup.sh, run_autograder and
    the course; each submission is graded exactly as `kata grade` grades it."""
    from kata import grade as grading
    from kata import gradescope as gs

    course = open_course()
    katas = select_katas(course, keys)
    try:
        over = gs.check_time(katas, timeout_s, allow_over_timeout)
        names = gs.build(course, katas, out.resolve(), gs.parse_visibility(course, katas, visibility))
    except grading.GradeError as exc:
        raise UsageError(str(exc)) from None
    if over:
        render.warning(over)
    render.wrote(f"{out} ({len(names)} files)",
                 f"katas {', '.join(k.id for k in katas)}, {sum(k.points for k in katas):g} points, at most "
                 f"{gs.worst_case_s(katas):g} s a submission")


@gradescope.command("run")
@click.option("--katas", "keys", multiple=True, metavar="IDS", help="The katas to grade.")
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=Path("/autograder"),
              show_default=True, help="Gradescope's autograder folder (submission/ in, results/ out).")
@click.option("--visibility", "visibility", multiple=True, metavar="[KATA[:CHECK]=]LEVEL",
              help="As `kata gradescope build` wrote it into run_autograder.")
def gradescope_run(keys: tuple[str, ...], root: Path, visibility: tuple[str, ...]) -> None:
    """What run_autograder runs on Gradescope: grade ROOT/submission, write ROOT/results/results.json."""
    from kata import grade as grading
    from kata import gradescope as gs

    course = open_course()
    katas = select_katas(course, keys)
    try:
        rules = gs.parse_visibility(course, katas, visibility)
    except grading.GradeError as exc:
        raise UsageError(str(exc)) from None
    results = gs.run(course, katas, root, rules)
    render.gradescope_output(results)


@gradescope.command("selfcheck")
@click.option("--katas", "keys", multiple=True, metavar="IDS", help="The katas to check.")
def gradescope_selfcheck(keys: tuple[str, ...]) -> None:
    """What setup.sh runs last: each kata's reference, graded here as a submission would be (in this
    container's memory), must get full marks; exit code 1 naming those that do not."""
    import tempfile

    from kata import gradescope as gs

    course = open_course()
    katas = select_katas(course, keys)
    with tempfile.TemporaryDirectory(prefix="kata-selfcheck-") as scratch:
        problems = gs.selfcheck(course, katas, Path(scratch))
    render.selfcheck(katas, problems)
    if problems:
        sys.exit(1)


@main.group()
def classroom() -> None:
    """For instructors: GitHub Classroom autograding of the katas (see docs/instructors.md)."""


@classroom.command("workflow")
@click.option("--katas", "keys", multiple=True, metavar="IDS",
              help="The katas of the assignment (ids or slugs, comma-separated or repeated). Default: every kata.")
@click.option("--repo", type=click.Path(path_type=Path, file_okay=False), default=Path("."), show_default=True,
              help="The template repository to write .github/workflows/classroom.yml into.")
@click.option("--course-repo", default=None, metavar="OWNER/NAME",
              help="Grade with the graders of this repository (checked out at --course-ref) rather than the "
                   "student's copy of them.")
@click.option("--course-ref", default=None, metavar="REF", help="The commit, tag or branch of --course-repo.")
def classroom_workflow(keys: tuple[str, ...], repo: Path, course_repo: str | None, course_ref: str | None) -> None:
    """Write the GitHub Classroom workflow: a step per kata (each check with its points), then the reporter."""
    from kata import classroom as gc

    if course_ref and not course_repo:
        raise UsageError("--course-ref needs --course-repo")
    course = open_course()
    katas = select_katas(course, keys)
    path = gc.write_workflow(course, katas, repo, course_repo=course_repo, course_ref=course_ref)
    render.wrote(path, f"{len(katas)} katas, {sum(k.points for k in katas):g} points")


@classroom.command("grade")
@click.argument("kata_id", metavar="KATA")
@click.option("--submission", type=click.Path(path_type=Path, exists=True, file_okay=False), default=Path("."),
              show_default=True, help="The student's repository.")
def classroom_grade(kata_id: str, submission: Path) -> None:
    """What each step of the Classroom workflow runs: grade KATA in the student's repository and print
    `result=<base64 JSON>` for $GITHUB_OUTPUT (the points, check by check, on stderr)."""
    from kata import classroom as gc

    course = open_course()
    kata = _kata(course, kata_id)
    grade, data, line = gc.grade_step(course, kata, submission.resolve())
    render.classroom_step(kata, grade, data, line)


@main.command("new")
@click.argument("kata_id", metavar="ID")
@click.argument("slug")
@click.option("--title", help="The kata's title (default: the slug in words).")
@click.option("--requires", multiple=True, metavar="ID", help="A kata whose pieces this one imports (repeatable).")
@json_option
def new_command(kata_id: str, slug: str, title: str | None, requires: tuple[str, ...], as_json: bool) -> None:
    """For course authors: start a new kata (course.toml entry, solution, README, graders, folders)."""
    course = open_course()
    new = scaffold.NewKata(kata_id, slug, title or slug.replace("-", " ").capitalize(), requires)
    try:
        written = scaffold.create(course, new)
    except scaffold.ScaffoldError as exc:
        raise UsageError(str(exc)) from None
    if as_json:
        emit("new", {"kata": kata_id, "written": [str(p) for p in written]})
        return
    render.new_kata(render.make_console(), kata_id, written)


@main.command()
@click.option("--write", is_flag=True, help="Rewrite exercise.py files that differ (backing them up first).")
def stubs(write: bool) -> None:
    """For course authors: check that each exercise.py is the stub derived from its solution."""
    course = open_course()
    stale = stale_stubs(course)
    changes = [workspace.reset(course, kata) for kata in stale] if write else []
    render.stubs_report(course, stale, changes)
    sys.exit(1 if stale and not write else 0)


main.add_command(nbgrader_group)
main.add_command(notebook_command)
main.add_command(viz_command)
