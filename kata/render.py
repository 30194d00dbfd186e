"""Presentation: everything the `kata` command prints, drawn with rich.

Functions here take plain data (course, results, progress) and a `Console`; they decide nothing.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import threading
import time
from collections import defaultdict
from pathlib import Path

import click
from rich import box
from rich.console import Console, Group
from rich.live import Live
from rich.markdown import Markdown
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.progress_bar import ProgressBar
from rich.spinner import Spinner
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from kata import progress as prog
from kata import runner, scoring, wording
from kata.course import Course, Kata
from kata.grade import MISSING, NOT_REGULAR, UNREADABLE, UNSAFE
from kata.grading import protocol
from kata.runner import Check, Frame, KataResult

STATUS_STYLE = {
    prog.PASSED: ("✓ passed", "green"),
    prog.FAILING: ("✗ failing", "red"),
    prog.NOT_STARTED: ("· not started", "dim"),
    prog.SKIPPED: ("↷ skipped", "yellow"),
}
CHECK_STYLE = {
    protocol.PASSED: ("✓", "green"),
    protocol.FAILED: ("✗", "red"),
    protocol.ERROR: ("!", "red"),
    protocol.NOT_IMPLEMENTED: ("…", "yellow"),
    protocol.FORBIDDEN: ("⊘", "magenta"),
    protocol.SKIPPED: ("↷", "dim"),
    protocol.MEMORY: ("!", "red"),
    protocol.TIMEOUT: ("⧖", "red"),
    protocol.CRASH: ("!", "red"),
}
OUTCOME_TITLE = {
    runner.PASSED: "passed",
    runner.FAILED: "failed",
    runner.NOT_IMPLEMENTED: "not implemented yet",
    runner.SYNTAX_ERROR: "syntax error",
    runner.IMPORT_ERROR: "import error",
    runner.EXCEPTION: "your module raised an exception while being imported",
    runner.FORBIDDEN: "forbidden built-in",
    runner.TIMEOUT: "timeout",
    runner.CRASH: "crash",
    runner.INTERNAL_ERROR: "the graders could not run",
    runner.MEMORY: "over the memory limit",
    runner.DEVICE_UNAVAILABLE: "no such device",
    runner.INCOMPLETE: "not every check ran",
    MISSING: "no file",
    UNREADABLE: "submission unreadable",
    NOT_REGULAR: "not a regular file (a symbolic link)",
}


def relative(path: str | Path, root: Path | None = None) -> str:
    """A path as short as it can be while an editor can still open it."""
    try:
        rel = os.path.relpath(path, root or Path.cwd())
    except ValueError:  # another drive, on Windows
        return str(path)
    return str(path) if rel.startswith("..") else rel


def make_console(stderr: bool = False) -> Console:
    """Where a command prints (stderr when stdout holds a `--json` report)."""
    return Console(stderr=stderr, highlight=False)


def warning(message) -> None:
    """A Python warning (a progress file set aside, say), one line on stderr."""
    make_console(stderr=True).print(f"[yellow]warning:[/] {message}")


def _frames(frames: list[Frame]) -> Text:
    text = Text()
    for frame in frames:
        where = f"{relative(frame.file)}:{frame.line}"
        text.append(where, style="bold cyan")
        if frame.function:
            text.append(f" in {frame.function}", style="cyan")
        text.append("\n")
        if frame.code:
            text.append(f"    {frame.code}\n")
    return text


def kata_list(console: Console, course: Course, states: dict[str, prog.KataProgress], next_id: str | None,
              *, one_line: bool = False) -> None:
    """Every kata with its status; a pass whose file changed since (a `kata reset`, an edit) says so.
    `one_line`: each kata on one line, its title cut to fit (`kata watch`, whose screen cannot scroll)."""
    changed = prog.changed_since_pass(course.katas, states)
    table = Table(title=None if one_line else course.title, box=box.SIMPLE_HEAVY, title_style="bold",
                  caption="passed, file changed: your exercise.py is not the file that passed (reset or edited "
                          "since); `kata check ID` checks it again" if changed else None, caption_justify="left")
    table.add_column("", width=1)
    table.add_column("ID", style="bold", no_wrap=True)
    if one_line:  # the other columns take about 54 of the console's width
        table.add_column("Kata", no_wrap=True, overflow="ellipsis", max_width=max(20, console.width - 54))
    else:
        table.add_column("Kata", ratio=1)
    table.add_column("Points", justify="right", min_width=6)
    table.add_column("Status", no_wrap=True)
    table.add_column("Tries", justify="right", min_width=5)
    table.add_column("Hints", justify="right", min_width=5)
    for kata in course.katas:
        state = states.get(kata.id, prog.KataProgress())
        label, style = STATUS_STYLE[state.status]
        if kata.id in changed:
            label, style = f"{label}, file changed", "yellow"
        hints = f"{state.hints_used}/{len(kata.hints)}" if state.hints_used else ""
        reveal = " [yellow](solution seen)[/]" if state.solution_revealed else ""
        table.add_row("→" if kata.id == next_id else "", kata.id, kata.title + reveal, f"{kata.points:g}",
                      Text(label, style=style), str(state.attempts or ""), hints)
    console.print(table)


def summary_line(course: Course, states: dict[str, prog.KataProgress]) -> Text:
    passed = [k for k in course.katas if states.get(k.id, prog.KataProgress()).status == prog.PASSED]
    earned = sum(k.points for k in passed)
    total = sum(k.points for k in course.katas)
    return Text(f"{len(passed)} of {len(course.katas)} katas passed · {earned:g} of {total:g} points")


def progress_report(console: Console, course: Course, states: dict[str, prog.KataProgress],
                    next_id: str | None) -> None:
    passed = sum(states.get(k.id, prog.KataProgress()).status == prog.PASSED for k in course.katas)
    summary = summary_line(course, states)
    # The bar beside its text, both on one line of the console's width.
    bar = ProgressBar(total=len(course.katas), completed=passed, width=max(10, min(40, console.width - 3
                                                                                   - summary.cell_len)))
    line = Table.grid(padding=(0, 2))
    line.add_row(bar, summary)
    console.print(Text("Progress", style="bold"))
    console.print(line)
    console.print()
    kata_list(console, course, states, next_id)
    if next_id:
        kata = course.find(next_id)
        console.print(f"Next: [bold]{kata.id}[/] {kata.title}: edit [cyan]{relative(kata.exercise)}[/], "
                      f"then [bold]kata check {kata.id}[/]")
        return
    skipped = [k.id for k in course.katas if states.get(k.id, prog.KataProgress()).status == prog.SKIPPED]
    if skipped:
        console.print(f"[yellow bold]Every kata is passed or skipped[/]: {', '.join(skipped)} skipped "
                      f"([bold]kata goto {skipped[0]}[/] goes back to it).")
    else:
        console.print("[green bold]Every kata is passed. The Transformer is yours.[/]")


def check_result(console: Console, course: Course, kata: Kata, result: KataResult,
                 unmet: list[Kata] | None = None, hints_used: int = 0, *, show_output: bool = False,
                 keys: bool = False, full: bool = False, height: int | None = None) -> None:
    """The report of one `kata check`: the title, the table of checks, then what to do about it.

    It ends with the essentials (the diagnosis, the first failure, the verdict and the next step), sized to
    fit `height` lines (the terminal's, less the prompt's, by default), so that they are what stays on
    screen however long the rest; failures of one cause are grouped and the others listed in a line each.
    `full` (`kata check --full`): every failure in detail, nothing cut. With a `height` given (`kata watch`,
    which redraws a screen), the table too is left out when the whole does not fit. `hints_used`: the hint
    tiers the student has seen; `show_output`: everything the student's code printed, passing checks
    included; `keys`: inside `kata watch`, where the next steps are keys, not commands."""
    head: list = [_title(kata, result)]
    if unmet:
        ids = ", ".join(k.id for k in unmet)
        head.append(Text.from_markup(f"[yellow]Builds on {ids}, not passed yet.[/] Graded, this kata uses the "
                                     "reference versions of those pieces; when you run your own code, yours are "
                                     "used."))
    table = _checks_table(result) if result.outcome not in _EARLY and not _stops_early(result) else None
    tail = _footer(kata, result, hints_used, keys, full)
    # Lines for the body: a screen's (`height`) holds the title too; a terminal's scrolls the title away, and
    # keeps two lines for the shell's prompt that follows (many prompts take two).
    room = height - _height(console, head) if height is not None else console.size.height - 2
    body = _body(console, kata, result, show_output, keys, full, room - _height(console, tail))
    whole = [*head, *([table] if table is not None else []), *body, *tail]
    if height is not None and not full:
        # A redrawn screen cannot scroll: the table goes first, then the body's least needed parts.
        for kept in range(len(body), -1, -1):
            whole = [*head, *body[:kept], *tail]
            if _height(console, whole) <= height:
                break
    for part in whole:
        console.print(part)


# Outcomes with no checks to list: the file was refused before any check ran.
_EARLY = (runner.SYNTAX_ERROR, runner.IMPORT_ERROR, runner.EXCEPTION, runner.DEVICE_UNAVAILABLE)
# Outcomes where the run stopped: a panel says why, below the checks that ran.
_STOPPED = (runner.TIMEOUT, runner.CRASH, runner.INTERNAL_ERROR, runner.MEMORY, runner.INCOMPLETE)


def _stops_early(result: KataResult) -> bool:
    """No table: refused before any check, or every check stops at the stub's NotImplementedError."""
    return (result.outcome == runner.FORBIDDEN and not result.checks) or result.outcome == runner.NOT_IMPLEMENTED


def _height(console: Console, parts: list) -> int:
    """The lines `parts` take, printed one after the other at the console's width."""
    options = console.options.update(height=None)
    return sum(len(console.render_lines(part, options, pad=False)) for part in parts)


def _body(console: Console, kata: Kata, result: KataResult, show_output: bool, keys: bool, full: bool,
          room: int) -> list:
    """What the result says between the table and the verdict, fitted to `room` lines unless `full`."""
    if result.outcome in _EARLY or result.outcome in _STOPPED or (result.outcome == runner.FORBIDDEN
                                                                    and not result.checks):
        return [_outcome_panel_for(result, None if full else room)]
    if result.outcome == runner.NOT_IMPLEMENTED:
        where = {f"{relative(c.frames[-1].file)}:{c.frames[-1].line}" for c in result.checks if c.frames}
        return [Panel(
            Text.assemble("Every check stops at ", ("raise NotImplementedError()", "bold"), " in ",
                          (", ".join(sorted(where)), "bold cyan"), ".\nReplace the ",
                          ("# YOUR CODE HERE", "bold"), " blocks with your implementation, then check again."),
            title="not implemented yet", border_style="yellow")]
    failures = _failures(result)
    if full:
        return [*_diagnosis_panels(failures), *(_failure_panel(c) for c in _distinct(failures)),
                *_printed(console, kata, result, show_output, keys)]
    diagnoses = _diagnosis_panels(failures, names=1)
    others = _others(failures)
    if show_output:  # asked for: right after the mistake named; on a redrawn screen (`keys`), cut to fit
        printed = _printed(console, kata, result, True, keys, room - _height(console, diagnoses) if keys else None)
        rest = _height(console, [*diagnoses, *others, *printed])
        first = [_failure_panel(failures[0], console, room - rest)] if failures else []
        return [*diagnoses, *printed, *first, *others]
    printed = _printed(console, kata, result, False, keys)
    rest = _height(console, [*diagnoses, *others, *printed])
    first = [_failure_panel(failures[0], console, room - rest)] if failures else []
    # In the order a screen too small keeps them: the mistake named, the first failure, the rest.
    return [*(diagnoses or first), *(first if diagnoses else []), *others, *printed]


def _failures(result: KataResult) -> list[Check]:
    """The failing checks the report explains, in course order (a forbidden call: the first that made it)."""
    failures = [c for c in result.checks if not c.passed]
    if result.outcome == runner.FORBIDDEN:
        # One forbidden call explains every check that reached it.
        failures = [c for c in failures if c.status == protocol.FORBIDDEN][:1]
    return failures


def _others(failures: list[Check]) -> list[Text]:
    """The failures after the first, grouped by cause: those a "Looks like" box names go under it; the
    rest in one line per cause (one message, its numbers aside), naming the checks that show it."""
    explained = {_family(c) for c in failures for _ in wording.unique_diagnoses(c.diagnoses)}
    causes: dict[str, list[str]] = {}
    for check in _distinct(failures)[1:]:
        if _family(check) not in explained:
            names = causes.setdefault(_cause(check), [])
            names.append(_family(check))
    lines = []
    for cause, names in causes.items():
        line = Text("Also failing: ", style="red")
        line.append("; ".join(names) if len(names) <= 2 else f"{names[0]}; {names[1]}; and {len(names) - 2} more")
        line.append(f" ({cause})", style="dim")
        lines.append(line)
    return lines


def _cause(check: Check) -> str:
    """A failure's cause in a few words: its message's first line, up to where its particulars start."""
    first = wording.course_words(check.message or check.status).split("\n", 1)[0]
    return re.split(r": | for | at ", first, maxsplit=1)[0].strip()[:60]


def check_interrupted() -> None:
    make_console(stderr=True).print("interrupted: the check was cancelled")


def not_recorded(console: Console, result: KataResult, why: str | None) -> None:
    """Why a check's result did not go into the progress file (`why`: None when it did)."""
    if why is not None and result.outcome not in (runner.INTERNAL_ERROR, runner.DEVICE_UNAVAILABLE):
        console.print(f"Not recorded in your progress: {why}.", style="dim")


def _title(kata: Kata, result: KataResult) -> Text:
    return Text.assemble(("Kata ", "bold"), (kata.id, "bold"), f" · {kata.title} · ", (relative(result.file), "cyan"))


class CheckProgress:
    """The live line while a kata is graded: checks done / total, the check running, the time so far.
    `event` takes the grading child's records as they arrive (from the runner's reader thread); the line
    is drawn only on a terminal, and leaves nothing behind when the report replaces it."""

    def __init__(self, console: Console, kata: Kata):
        self.console, self.kata = console, kata
        self.started = time.monotonic()
        self.total: int | None = None
        self.done = self.failing = 0
        self.current = "starting the grading process"
        self.lock = threading.Lock()
        self.spinner = Spinner("dots", style="cyan")
        self.live = Live(self, console=console, transient=True, refresh_per_second=8) if console.is_terminal else None

    def __enter__(self) -> CheckProgress:
        if self.live is not None:
            self.live.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.live is not None:
            self.live.stop()

    def event(self, record: dict) -> None:
        with self.lock:
            kind = record.get("event")
            if kind == "session":
                self.current = "importing your file"
            elif kind == "import":  # once per grading process: a second process (watch's retry) counts anew
                self.total, self.done, self.failing = record.get("checks"), 0, 0
                self.current = "your file is imported"
            elif kind == "begin":
                self.current = str(record.get("title") or record.get("id"))
            elif kind == "check":
                self.done += 1
                self.failing += record.get("status") != protocol.PASSED

    def line(self) -> Text:
        with self.lock:
            count = f"{self.done}/{self.total}" if self.total is not None else f"{self.done}"
            text = Text.assemble((f"Kata {self.kata.id}", "bold"), " · ", (f"{count} runs", "bold"))
            if self.failing:
                text.append(f" · {self.failing} not passed", style="red")
            text.append(f" · {time.monotonic() - self.started:.1f} s · ", style="dim")
            text.append(self.current)
        text.truncate(max(10, self.console.width - 3), overflow="ellipsis")  # one line, beside the spinner
        return text

    def __rich__(self):
        self.spinner.update(text=self.line())
        return self.spinner


def _family(check: Check) -> str:
    """A check's title without its parameters: "Equal to torch.softmax [cpu-float32]" -> "Equal to torch.softmax"."""
    return check.title.split(" [", 1)[0]


def _distinct(checks: list[Check]) -> list[Check]:
    """The first failure of each family: the same bug seen on float32 and float64 is shown once."""
    seen: set[str] = set()
    out = []
    for check in checks:
        if _family(check) not in seen:
            seen.add(_family(check))
            out.append(check)
    return out


POINT_DECIMALS = 2


def points_text(value: float) -> str:
    """Points as the report writes them: at most two decimals, no trailing zeros (1.25, 0.6, 10)."""
    text = f"{value:.{POINT_DECIMALS}f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _units(value: float, decimals: int = POINT_DECIMALS) -> int:
    """`value` in hundredths (for two decimals), rounded exactly as `points_text` writes it."""
    return round(float(f"{value:.{decimals}f}") * 10 ** decimals)


def apportion(values: list[float], decimals: int = POINT_DECIMALS, total: float | None = None) -> list[float]:
    """`values` rounded to `decimals` so that they add up to `total` written the same way (default: their
    sum), by the largest remainder method: rows of points that add up to the total printed under them."""
    scale = 10 ** decimals
    target = _units(sum(values) if total is None else total, decimals)
    floors = [int(v * scale + 1e-9) for v in values]
    order = sorted(range(len(values)), key=lambda i: values[i] * scale - floors[i], reverse=True)
    for i in order[:max(0, target - sum(floors))]:
        floors[i] += 1
    return [f / scale for f in floors]


def _checks_table(result: KataResult) -> Table | None:
    """One row per family of checks: each run (device, dtype) marked on its own, how many of its runs
    passed, and its points (earned of worth). The earned points add up to the total under the table, the
    points not earned to the rest of the kata's, so a row that passed shows one number that counts in both."""
    if not result.checks:
        return None
    families: dict[str, list[Check]] = defaultdict(list)
    for check in result.checks:
        families[_family(check)].append(check)
    earned_raw = [sum(c.points for c in checks if c.passed) for checks in families.values()]
    worth_raw = [sum(c.points for c in checks) for checks in families.values()]
    # A failed critical check caps the score (`kata.scoring`): the rows earn what they are worth, and a row of
    # its own takes off what the cap does, so that the rows still add up to the total.
    capped = result.capped_off > 0
    uncapped = result.points + result.capped_off if capped else result.points
    earned = apportion(earned_raw, total=uncapped)
    lost = apportion([w - e for w, e in zip(worth_raw, earned_raw, strict=True)],
                     total=_units(result.max_points) / 100 - _units(uncapped) / 100)
    table = Table(box=None, show_header=True, header_style="dim", padding=(0, 1))
    table.add_column(width=1)
    table.add_column("check", ratio=3)
    table.add_column("runs", ratio=1)
    table.add_column("passed", justify="right", no_wrap=True)
    table.add_column("points", justify="right", style="dim", no_wrap=True)
    for (family, checks), row_earned, row_lost in zip(families.items(), earned, lost, strict=True):
        worst = next((c for c in checks if not c.passed), checks[0])
        mark, style = CHECK_STYLE.get(worst.status, ("?", "red"))
        # Each run marked on its own where they differ; where they agree, the row's mark says it for all.
        mixed = len({c.status for c in checks}) > 1
        variants = Text(style="dim")
        for check in checks:
            label = check.title[len(family):].strip(" []")
            if label and mixed:
                run_mark, run_style = CHECK_STYLE.get(check.status, ("?", "red"))
                variants.append(f"{run_mark} {label} ", style=run_style)
            elif label:
                variants.append(f"{label} ")
        passed = sum(c.passed for c in checks)
        points = points_text(row_earned) if passed == len(checks) else (
            f"{points_text(row_earned)}/{points_text(row_earned + row_lost)}")
        table.add_row(Text(mark, style=style), Text(family, style=None if worst.passed else style), variants,
                      Text(f"{passed}/{len(checks)}", style=None if worst.passed else style), f"{points} pt")
    if capped:
        off = points_text((_units(uncapped) - _units(result.points)) / 100)
        table.add_row(Text("!", style="red"), Text(scoring.cap_note(result.critical_titles()), style="red"), "", "",
                      Text(f"−{off} pt", style="red"))
    return table


def _diagnosis_panels(failures: list[Check], names: int | None = None) -> list[Panel]:
    """One "Looks like" box per classic mistake recognised, naming the checks that show it (the first
    `names` of them, and how many more)."""
    families: dict[str, list[str]] = {}
    for check in failures:
        for diagnosis in wording.unique_diagnoses(check.diagnoses):
            seen = families.setdefault(diagnosis["explanation"], [])
            if _family(check) not in seen:
                seen.append(_family(check))
    panels = []
    for explanation, seen in families.items():
        label = "the check" if len(seen) == 1 else f"{len(seen)} checks"
        body = Text(explanation)
        body.append(f"\nSeen in {label}: ", style="dim")
        shown = seen if names is None or len(seen) <= names else [*seen[:names], f"and {len(seen) - names} more"]
        body.append("; ".join(shown), style="dim")
        panels.append(Panel(body, title=wording.LOOKS_LIKE, border_style="yellow", title_align="left"))
    return panels


def _failure_panel(check: Check, console: Console | None = None, room: int | None = None) -> Panel:
    """A failing check: its message in the course's words, where in the student's code, what it printed.
    Given a `console` and `room`, the message and output are cut so that the panel fits `room` lines."""
    message = Text(wording.course_words(check.message or "check failed"))
    output = Text(check.output.rstrip(), style="dim") if check.output else None

    def panel(message: Text, output: Text | None) -> Panel:
        parts: list = [message]
        if check.frames:
            parts += [Text("In your code:", style="bold"), _frames(check.frames)]
        if output is not None:
            parts += [Text("Your code printed:", style="bold"), output]
        mark, style = CHECK_STYLE.get(check.status, ("?", "red"))
        label = {protocol.ERROR: "exception in your code", protocol.FORBIDDEN: "forbidden built-in"}.get(
            check.status, check.status)
        return Panel(Group(*parts), title=f"{mark} {check.title}", subtitle=label, border_style=style,
                     title_align="left")

    if console is None or room is None:
        return panel(message, output)
    if output is not None:
        output = _clip(console, output, 3)
    over = _height(console, [panel(message, output)]) - room
    if over > 0:
        message = _clip(console, message, max(1, _wrapped(console, message) - over - 1))
    return panel(message, output)


def _wrapped(console: Console, text: Text) -> int:
    """The lines `text` takes inside a panel as wide as the console."""
    return len(text.wrap(console, console.width - 4))


def _clip(console: Console, text: Text, lines: int) -> Text:
    """`text` cut to its first `lines` lines as a panel wraps them, and a line saying what was cut."""
    wrapped = text.wrap(console, console.width - 4)
    if len(wrapped) <= lines:
        return text
    kept = Text("\n").join(wrapped[:lines])
    kept.append(f"\n… {len(wrapped) - lines} more lines (kata check --full)", style="dim")
    return kept


def _printed(console: Console, kata: Kata, result: KataResult, show: bool, keys: bool,
             room: int | None = None) -> list:
    """What the student's code printed that the report has not shown yet: at import time (always shown),
    and in checks without a panel of their own (shown with `show`, cut to `room` lines when given; else
    counted and how to see it said)."""
    if result.outcome in (runner.SYNTAX_ERROR, runner.IMPORT_ERROR, runner.EXCEPTION, runner.TIMEOUT,
                          runner.CRASH, runner.INTERNAL_ERROR, runner.MEMORY) or (
            result.outcome == runner.FORBIDDEN and not result.checks):
        return []  # the outcome panel shows the import's output
    parts: list = []
    if result.output.strip():
        parts.append(Panel(Text(result.output.rstrip(), style="dim"), title="Your module printed when imported",
                           border_style="dim", title_align="left"))
    failures = _failures(result) if result.outcome in (runner.FAILED, runner.FORBIDDEN) else []
    shown = {c.id for c in failures[:1]}
    rest = [c for c in result.checks if c.output.strip() and c.id not in shown]
    if not rest:
        return parts
    if show:
        body = Text()
        for check in rest:
            body.append(check.title + "\n", style="bold")
            body.append(check.output.rstrip() + "\n", style="dim")
        body.rstrip()
        if room is not None:
            body = _clip(console, body, max(1, room - _height(console, parts) - 3))
        return [*parts, Panel(body, title="Your code printed, check by check", border_style="dim",
                              title_align="left")]
    other = "" if Path(result.file).resolve() == kata.exercise.resolve() else f" --file {relative(result.file)}"
    how = "press o to see it" if keys else f"kata check {kata.id}{other} --show-output"
    return [*parts, Text(f"Your code printed in {len(rest)} more check{'s' if len(rest) > 1 else ''}: {how}.",
                         style="dim")]


def _outcome_panel_for(result: KataResult, room: int | None = None) -> Panel:
    """Why the run stopped or was refused: the message, where in the student's code, what it printed
    (cut to fit `room` lines, when given)."""
    message = Text(wording.course_words(result.message))
    output = Text(result.output.rstrip(), style="dim") if result.output else None

    def panel(message: Text, output: Text | None) -> Panel:
        parts: list = [message]
        if result.frames:
            label = "Where:" if result.outcome in (runner.SYNTAX_ERROR, runner.FORBIDDEN) else "In your code:"
            parts += [Text(label, style="bold"), _frames(result.frames)]
        if output is not None:
            parts += [Text("Your code printed:", style="bold"), output]
        if result.outcome == runner.INTERNAL_ERROR:
            parts.append(Text("This is a bug in the course, not in your code: please report it "
                              "(`kata check --debug` shows the grader's log).", style="italic"))
        return Panel(Group(*parts), title=OUTCOME_TITLE[result.outcome], border_style="red", title_align="left")

    if room is None or output is None:
        return panel(message, output)
    console = make_console()
    over = _height(console, [panel(message, output)]) - room
    if over > 0:
        output = _clip(console, output, max(3, _wrapped(console, output) - over - 1))
    return panel(message, output)


def _verdict(kata: Kata, result: KataResult) -> Text:
    """The verdict in one line: the kata, the outcome, the runs and points; then the time and devices."""
    mark, style = ("✓", "green") if result.passed else ("✗", "red")
    line = Text(f"{mark} Kata {kata.id} {OUTCOME_TITLE[result.outcome]}", style=f"bold {style}")
    if result.checks:
        n_passed = sum(c.passed for c in result.checks)
        points = (f"{points_text(result.points)} of {points_text(result.max_points)} points" if result.complete
                  else "no points (not every CPU check ran)")
        line.append(f" · {n_passed}/{len(result.checks)} runs passed · {points}")
    line.append(f" · {result.seconds:.1f} s" + (" · " + ", ".join(result.devices) if result.devices else ""),
                style="dim")
    return line


def _footer(kata: Kata, result: KataResult, hints_used: int, keys: bool, full: bool) -> list[Text]:
    """The lines that end every report: the verdict, whether CUDA was verified, and the next step."""
    lines = [_verdict(kata, result)]
    if result.cuda_available is not None and not result.cuda_verified:
        reason = "no GPU visible to torch" if not result.cuda_available else "--device cpu"
        lines.append(Text.from_markup(f"[yellow]CUDA not verified[/] ({reason})."))
    if result.passed:
        if not keys:
            lines.append(Text.from_markup("Next: [bold]kata next[/] shows what comes next."))
        return lines
    if result.outcome in (runner.INTERNAL_ERROR, runner.DEVICE_UNAVAILABLE):
        return lines
    failing = len(_distinct(_failures(result))) if result.outcome in (runner.FAILED, runner.FORBIDDEN) else 0
    if keys:
        step = "fix it and save"
    elif failing > 1 and not full:
        step = f"fix it and check again (all {failing} failures: [bold]kata check {kata.id} --full[/])"
    else:
        step = f"fix it, then [bold]kata check {kata.id}[/] again"
    lines.append(Text.from_markup(f"Next: {step}."))
    lines.append(Text.from_markup(f"Stuck? {_hint_offer(kata, hints_used, keys)}", style="dim"))
    return lines


def _hint_offer(kata: Kata, hints_used: int, keys: bool) -> str:
    """What more help there is: the next hint tier while there is one, then the reference solution;
    inside `kata watch` (`keys`) as keys, not commands."""
    if hints_used < len(kata.hints):
        how = "press [bold]h[/] to reveal" if keys else f"[bold]kata hint {kata.id}[/] reveals"
        return f"{how} hint {hints_used + 1} of {len(kata.hints)}."
    if keys:
        return "You have seen every hint (press [bold]h[/] to see them again)."
    return (f"You have seen every hint ([bold]kata hint {kata.id}[/] shows them again); "
            f"[bold]kata solution {kata.id}[/] shows the reference.")


def debug_log(console: Console, result: KataResult) -> None:
    if result.log.strip():
        console.print(Panel(Text(result.log), title="grader log (for course authors)", border_style="dim"))


def hint(console: Console, kata: Kata, tier: int, shown: list[str], keys: bool = False) -> None:
    """The hints shown so far; `keys`: inside `kata watch`, where the next one is a key away and the screen
    holds the newest alone (`kata hint` shows them all)."""
    names = ("concept", "approach", "near-solution")
    for number, text in enumerate(shown, start=1):
        if keys and number != tier:
            continue
        label = names[number - 1] if number <= len(names) else f"tier {number}"
        new = number == tier
        console.print(Panel(Markdown(text), title=f"Hint {number} of {len(kata.hints)} · {label}",
                            border_style="cyan" if new else "dim", title_align="left"))
    if tier >= len(kata.hints):
        after = "" if keys else f" `kata solution {kata.id}` shows the reference."
        console.print(f"[dim]That was the last hint: there is no next one.{after}[/]")
    else:
        console.print(f"[dim]Press h for hint {tier + 1} of {len(kata.hints)}.[/]" if keys else
                      f"[dim]`kata hint {kata.id}` again for hint {tier + 1} of {len(kata.hints)}.[/]")


def solution_not_revealed(console: Console) -> None:
    console.print("Not revealed. `kata hint` gives a smaller nudge.")


def solution(console: Console, kata: Kata, source: str) -> None:
    page(console, [Panel(Syntax(source, "python", line_numbers=True, word_wrap=True),
                         title=f"Reference solution of kata {kata.id}: {kata.title}", title_align="left")])


def show(console: Console, kata: Kata, state: prog.KataProgress, prerequisites: list[Kata]) -> None:
    """The kata's README, its LaTeX as Unicode text (the file keeps its LaTeX), and where the kata stands."""
    from kata.math_text import render_math

    label, style = STATUS_STYLE[state.status]
    facts = [f"[{style}]{label}[/]", f"{kata.points:g} points", f"file: [cyan]{relative(kata.exercise)}[/]"]
    if kata.sanity.is_file():
        facts.append(f"try it: [bold]python {relative(kata.sanity)}[/]")
    if prerequisites:
        facts.append("builds on " + ", ".join(k.id for k in prerequisites))
    page(console, [Markdown(render_math(kata.readme.read_text(encoding="utf-8"))),
                   Text.from_markup(" · ".join(facts))])


def page(console: Console, parts: list) -> None:
    """Print `parts`; in a terminal they are taller than, through a pager, so that the reader starts at
    their start instead of seeing it scroll away: $PAGER, else less (with git's defaults: colours kept, the
    text left on screen when it quits). Without either, straight to the terminal."""
    pager = os.environ.get("PAGER") or ("less" if shutil.which("less") else None)
    if not console.is_terminal or pager is None or _height(console, parts) < console.size.height:
        for part in parts:
            console.print(part)
        return
    with console.capture() as capture:
        for part in parts:
            console.print(part)
    env = {**os.environ, "LESS": os.environ.get("LESS", "FRX")}
    subprocess.run(pager, shell=True, input=capture.get(), text=True, env=env, check=False)


def doctor(console: Console, rows: list[tuple[str, str, bool]]) -> None:
    table = Table(box=box.SIMPLE, show_header=False)
    table.add_column(width=1)
    table.add_column(style="bold")
    table.add_column()
    for name, value, ok in rows:
        table.add_row(Text("✓" if ok else "✗", style="green" if ok else "red"), name, value)
    console.print(table)


def next_kata(console: Console, kata: Kata | None, activation_hint: str | None) -> None:
    """`kata next`: the kata to work on and the three commands of its loop; how to make `kata` a command."""
    if kata is None:
        console.print("[green bold]Every kata is passed or skipped.[/] `kata progress` says which.")
        return
    console.print(f"[bold]Kata {kata.id}: {kata.title}[/]")
    console.print(f"  read    [bold]kata show {kata.id}[/]")
    console.print(f"  edit    [cyan]{relative(kata.exercise)}[/]")
    if kata.sanity.is_file():
        console.print(f"  try     [bold]python {relative(kata.sanity)}[/]  [dim](shapes only, no grade)[/]")
    console.print(f"  check   [bold]kata check {kata.id}[/]")
    if activation_hint:
        console.print(f"[yellow]{activation_hint}[/]")


def current_kata(console: Console, kata: Kata) -> None:
    """`kata goto`: the kata now current, and where to go on."""
    console.print(f"Current kata: [bold]{kata.id}[/] {kata.title}")
    console.print(f"  edit    [cyan]{relative(kata.exercise)}[/]   (or `kata edit`)")
    console.print("  watch   [bold]kata watch[/]")


def skipped(console: Console, kata: Kata, status: str, following: Kata | None) -> None:
    """`kata skip`: what became of the kata (`status`, now), and the kata that comes next."""
    if status == prog.PASSED:
        console.print(f"Kata {kata.id} is already passed: nothing to skip.")
    else:
        console.print(f"[yellow]Skipped[/] kata {kata.id} {kata.title} (not passed: `kata check {kata.id}` "
                      "any time to come back to it).")
    if following:
        console.print(f"Next: [bold]{following.id}[/] {following.title}")


def reset_all(console: Console, done) -> None:
    """`kata reset --all`: how many katas changed, and the backup folder that undoes it."""
    changed = [c for c in done.changes if c.changed]
    console.print(f"[green]Reset[/] {len(changed)} of {len(done.changes)} katas to their stubs.")
    if done.folder:
        console.print(f"Everything as it was is in [cyan]{relative(done.folder)}[/] (exercise files "
                      "in their folders, and the progress file): copy a file back to undo.")
    console.print("Your progress is kept (`kata progress`).")


def change(console: Console, verb: str, kata: Kata, changed: bool, backup: str | None,
           restored_from: str | None = None) -> None:
    if not changed:
        console.print(f"{relative(kata.exercise)} already is that version: nothing to do.")
        return
    source = f" from {relative(restored_from)}" if restored_from else ""
    console.print(f"[green]{verb}[/] {relative(kata.exercise)}{source}.")
    if backup:
        console.print(f"Your previous file is saved as [cyan]{relative(backup)}[/] "
                      f"(`kata restore {kata.id}` brings back the latest backup).")


# Plain lines (no rich markup or wrapping): what instructors' scripts and CI logs read.


def wrote(where: str | Path, what: str) -> None:
    click.echo(f"wrote {where}: {what}")


def absent_from_lms(console: Console, file: str, students: list[str], blank: bool) -> None:
    """Who on the roster handed nothing in, and what the LMS gradebook gives them."""
    given = "left blank (the LMS keeps what it had)" if blank else "0 (--absent-blank leaves them blank)"
    console.print(f"{file}: {len(students)} on the roster handed nothing in, {given}: {', '.join(students)}")


def gradescope_output(results: dict) -> None:
    """`kata gradescope run`: the submission's feedback, for run_autograder's log."""
    click.echo(results["output"])


def selfcheck(katas: list[Kata], problems: list[str]) -> None:
    """`kata gradescope selfcheck`: each problem on stderr, or that every reference gets full marks."""
    for problem in problems:
        click.echo(problem, err=True)
    if not problems:
        click.echo(f"every reference gets full marks here: {', '.join(k.id for k in katas)}")


def classroom_step(kata: Kata, grade, data: dict, line: str, lines: int = 4) -> None:
    """`kata classroom grade`: the step's log on stderr (the verdict and points, then each check, a failed one
    with its message, cut to `lines` lines, and its diagnoses; or why no check ran), the `result=` line for
    GitHub on stdout. The points are those the reporter adds up, written without float noise."""
    earned = sum(t["score"] for t in data["tests"])
    head = f"{kata.id} {kata.title}: {OUTCOME_TITLE.get(grade.outcome, grade.outcome)}, " \
           f"{points_text(earned)} of {points_text(kata.points)} points"
    if not grade.checks_ran:
        click.echo(f"{head}\n  " + grade.reason().replace("\n", "\n  "), err=True)
        click.echo(line)
        return
    passed = sum(c["status"] == runner.PASSED for c in grade.checks)
    click.echo(f"{head} ({passed} of {len(grade.checks)} checks passed)", err=True)
    for check in grade.checks:
        if check["status"] == runner.PASSED:
            click.echo(f"  ✓ {check['title']}", err=True)
            continue
        text = wording.check_feedback(check["message"], check.get("diagnoses", []), check["status"], lines)
        click.echo(f"  ✗ {check['title']}: " + text.replace("\n", "\n      "), err=True)
    if grade.capped_off > 0:
        click.echo(f"  ! {grade.cap_note()}", err=True)
    click.echo(line)


def stubs_report(course: Course, stale: list[Kata], changes: list) -> None:
    """`kata stubs`: the stale stubs, or those rewritten (`--write`), or that every stub is derived."""
    for kata, change in itertools.zip_longest(stale, changes):
        if change is None:
            click.echo(f"stale: {kata.exercise}")
        else:
            backup = f" (previous file backed up to {change.backup})" if change.backup else ""
            click.echo(f"rewrote {kata.exercise}{backup}")
    if not stale:
        click.echo(f"all {len(course.katas)} stubs are derived from their solutions")


def nbgrader_exported(katas: list[Kata], report) -> None:
    """`kata nbgrader export`: what was written, and the nbgrader commands that come next."""
    names = list(report.assignments)
    click.echo(f"Exported {len(katas)} kata(s) as {len(names)} nbgrader assignment(s) into {report.root}")
    click.echo(f"  {len(report.written)} file(s) written, {len(report.unchanged)} unchanged")
    first = names[0]
    click.echo("\nNext, in that folder, with this Python environment active:")
    for line in (
        "nbgrader validate source/*/*.ipynb        # optional: each notebook's reference gets full marks",
        f"nbgrader generate_assignment {first}    # release" + ("; \"*\" releases every assignment" if not report.gives
                                                             else ", in course order (see the warnings)"),
        f"nbgrader collect {first}                # or copy into submitted/<student>/{first}/",
        f"nbgrader autograde {first}",
        f"nbgrader generate_feedback {first}",
        "nbgrader export                           # grades.csv",
    ):
        click.echo("  " + line)


def notebook_written(kata: Kata, path: Path) -> None:
    click.echo(f"Wrote {relative(path)}\nOpen it with `jupyter lab {relative(path)}`; its last cell runs "
               f"`kata check {kata.id}`.")


def new_kata(console: Console, kata_id: str, written: list[Path]) -> None:
    """`kata new`: the files written, and what makes the kata done."""
    console.print(f"[green]Created[/] kata {kata_id}:")
    for path in written:
        console.print(f"  {relative(path)}")
    console.print("Fill in every TODO(kata new): the solution and its README, the hints in course.toml, the "
                  "graders (the shared checks are there), at least three planted mistakes and four alternatives. "
                  f"Then `kata stubs --write` and `kata verify {kata_id}`, which lists what is still missing, "
                  "and a row in the README's table of katas.")


def verifying(console: Console, katas: list[Kata]):
    """The spinner while `kata verify` proves the katas (a context manager)."""
    what = f"{katas[0].id} {katas[0].title}" if len(katas) == 1 else f"{len(katas)} katas"
    return console.status(f"verifying {what}…")


def verified(console: Console, kata: Kata, report) -> None:
    """One kata proved (or not) by `kata verify`, as soon as it is."""
    console.print(("[green]✓[/]" if report.ok else "[red]✗[/]") + f" {kata.id} {kata.title} "
                  f"({len(report.runs)} runs, slowest {report.slowest:.1f} s)")


def verify_progress(console: Console, progress_file: Path, checks: list, regrade: bool) -> None:
    """`kata verify --progress`: each recorded pass proven or not, and what the proof is worth."""
    ok = all(c.ok for c in checks)
    if not checks:
        console.print(f"No kata is recorded as passed in {progress_file}.")
    for check in checks:
        mark = "[green]✓[/]" if check.ok else "[red]✗[/]"
        console.print(f"{mark} {check.kata} {check.verdict}" + (f": {check.detail}" if check.detail else ""))
    if checks and regrade:
        console.print("[green bold]every pass is proven[/] (each file graded again and passed)" if ok
                      else "[red bold]some passes are not proven[/]")
    elif checks:
        console.print(("[green bold]every pass names the file as it is now[/]" if ok
                       else "[red bold]some passes do not match their files[/]")
                      + ": identity only (the SHA-256 says which file was recorded as passing, not that it "
                      "passes: a pass written by hand with the right hash matches too). --regrade grades "
                      "each file again.")


def verify_report(console: Console, reports: list, seconds: float) -> None:
    # Short headers, so the table fits 80 columns; the caption says what they count.
    table = Table(title="kata verify", box=box.SIMPLE_HEAVY, collapse_padding=True, pad_edge=False, caption=(
        "Ref: reference passes (seeds) · Caught / Named: planted mistakes failing / named by their own diagnosis "
        "· False: diagnoses no mistake declares (must be 0) · Alt: correct alternatives passing · Covered: "
        "diagnoses with a planted mistake, of those the graders define · Slowest: the slowest run, beside the "
        "kata's time budget"), caption_justify="left")
    for column in ("", "Kata", "Ref", "Stub", "Caught", "Named", "False", "Alt", "Covered", "Slowest", "Budget"):
        table.add_column(column)
    problems: dict[str, list[str]] = defaultdict(list)
    for report, kata in reports:
        by_kind: dict[str, list] = defaultdict(list)
        for run in report.runs:
            by_kind[run.kind].append(run)

        def score(kind: str, by_kind=by_kind) -> str:
            runs = by_kind[kind]
            return f"{sum(r.ok for r in runs)}/{len(runs)}" if runs else "-"

        ok = report.ok
        counts = report.counts()
        table.add_row(Text("✓" if ok else "✗", style="green" if ok else "red"), kata.id,
                      score("reference"), score("stub"), f"{counts['caught']}/{counts['mistakes']}",
                      f"{counts['named']}/{counts['mistakes']}",
                      Text(str(counts["false_diagnoses"]), style="red" if counts["false_diagnoses"] else ""),
                      score("alternative"),
                      Text(f"{counts['covered']}/{counts['diagnoses']}",
                           style="red" if report.uncovered else ""),
                      f"{report.slowest:.1f} s", f"{kata.time_budget_s:g} s")
        problems[kata.id] = report.problems
    console.print(table)
    for kata_id, found in problems.items():
        for problem in found:
            console.print(f"[red]✗ {kata_id}[/] {problem}")
    n_ok = sum(r.ok for r, _ in reports)
    style = "green" if n_ok == len(reports) else "red"
    console.print(f"[{style} bold]{n_ok} of {len(reports)} katas sound[/] · {seconds:.0f} s")
    verify_cuda(console, [report for report, _ in reports])


def verify_cuda(console: Console, reports: list) -> None:
    """Whether the passing runs were graded on a GPU too: never left for the reader to assume."""
    unverified = [r.kata for r in reports if r.runs and not r.cuda_verified]
    gpus = sorted({gpu for r in reports for gpu in r.cuda_devices})
    if not unverified and gpus:
        console.print(f"CUDA verified on {', '.join(gpus)}: every reference and alternative passed on cpu and cuda.")
    elif unverified:
        where = "every kata" if len(unverified) == len([r for r in reports if r.runs]) else ", ".join(unverified)
        reason = "no GPU visible to torch" if not gpus else f"not every run of {where} was graded on {gpus[0]}"
        stand_in = all(run.cuda_checks_on_cpu for r in reports if r.kata in unverified for run in r.passing)
        console.print(f"[yellow]CUDA not verified[/] ({reason}): the passing runs of {where} were graded on cpu "
                      "only" + ("; the half-precision checks written for CUDA ran on the CPU." if stand_in else "."))


class GradeProgress:
    """The live bar of `kata grade`: units (student × kata) finished of the total, with an ETA."""

    def __init__(self, console: Console):
        self.progress = Progress(TextColumn("[bold]grading[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=console,
                                 transient=False)
        self.task = None

    def __enter__(self) -> GradeProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def start(self, to_grade: int, reused: int) -> None:
        if reused:
            rest = f"grading the other {to_grade}" if to_grade else "nothing to grade"
            self.progress.console.print(f"{reused} results reused from the journal (their files and graders are "
                                        f"unchanged): {rest}.")
        if to_grade:
            self.task = self.progress.add_task("", total=to_grade)

    def result(self, grade, reused: bool) -> None:
        if not reused and self.task is not None:
            self.progress.update(self.task, advance=1, description=f"{grade.student} {grade.kata}")


def _grade_cell(grade) -> Text:
    if grade is None:
        return Text("·", style="dim")
    if grade.outcome in (MISSING, UNREADABLE):
        return Text("—", style="dim")
    style = "green" if grade.points >= grade.max_points else "yellow" if grade.points > 0 else "red"
    return Text(f"{grade.points:.3g}", style=style)


def grade_summary(console: Console, state, written: dict[str, Path], out: Path, max_rows: int = 60,
                  max_problems: int = 20) -> None:
    """The class's grades: a table of students × katas, then what went wrong where, then the files."""
    table = Table(box=box.SIMPLE_HEAVY, title=f"kata grade · {len(state.submissions)} students")
    table.add_column("Student")
    for kata in state.katas:
        table.add_column(kata.id, justify="right")
    table.add_column(f"Total /{state.max_total:g}", justify="right", style="bold")
    for submission in state.submissions[:max_rows]:
        cells = [_grade_cell(state.grades.get((submission.student, k.id))) for k in state.katas]
        table.add_row(submission.student, *cells, f"{state.student_total(submission.student):.4g}")
    console.print(table)
    if len(state.submissions) > max_rows:
        console.print(f"… {len(state.submissions) - max_rows} more students in grades.csv")
    graded = [g for s in state.submissions for k in state.katas if (g := state.grades.get((s.student, k.id)))]
    missing = [f"{g.student} {g.kata}" for g in graded if g.outcome == MISSING]
    if missing:
        more = f" … {len(missing) - max_problems} more" if len(missing) > max_problems else ""
        console.print(f"[dim]no file for[/] {', '.join(missing[:max_problems])}{more} [dim](looked for "
                      "exercises/<kata>/exercise.py, <kata>/exercise.py or <kata>.py)[/]")
    problems = [g for g in graded if g.outcome not in (runner.PASSED, runner.FAILED, runner.NOT_IMPLEMENTED, MISSING)]
    for grade in problems[:max_problems]:
        where = f" ({', '.join(grade.where[:1])})" if grade.where else ""
        console.print(f"[red]{grade.student} {grade.kata}[/] {OUTCOME_TITLE.get(grade.outcome, grade.outcome)}"
                      f"{where}: {' '.join(grade.message.split())[:160]}")
    if len(problems) > max_problems:
        console.print(f"… {len(problems) - max_problems} more in katas.csv")
    done = len(state.grades)
    if state.interrupted:
        console.print(f"[yellow bold]interrupted[/]: {done} of {state.total_units} graded and kept; the same "
                      "command continues where this run stopped.")
    line = f"{state.graded} graded in {state.seconds:.0f} s"
    if state.reused:
        line += f", {state.reused} reused from the journal"
    if state.unreadable_lines:
        line += f", {state.unreadable_lines} unreadable journal lines ignored (graded again)"
    console.print(line + ".")
    if UNSAFE in state.isolation:  # a merge of shards names each shard's
        console.print("[yellow bold]not isolated[/]: graded with --unsafe-no-sandbox, the students' code ran with "
                      "your permissions (the reports say so).")
    console.print(f"Reports in [cyan]{relative(out)}[/]: " + ", ".join(written) + " (and the journal results.jsonl).")
