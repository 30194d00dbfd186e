"""`kata watch`: check the current kata every time its file is saved, and show the result in place.

The screen holds one kata at a time: its latest result and a line of keys. The session moves to the
next kata only when the student asks:

    n  next kata   h  next hint   l  the list of katas (l again: back)   o  what your code printed (on/off)
    c  check again   q  quit

Each result replaces the screen: a check that is running or was cancelled never leaves an earlier
verdict on screen as if it were current. Inside the session the next steps are keys, not commands. The
report is sized to the terminal (`render.check_result`'s `height`): the kata, the verdict, the first
thing to fix and the keys always fit, and the table of checks is left out when they would not with it.

A save while a check runs restarts it, as rustlings' watch does: the check of the old file is cancelled
(its grading process killed, as Ctrl-C does) and the new file is checked.

Saves are seen through file-system events (`watchfiles`). Some file systems send none (WSL's /mnt/c,
network drives, some containers): the session also notices a changed modification time, checks the
file anyway, and says to use `kata watch --poll`, which looks every half second instead.

Ctrl-C during a check cancels that check (the grading process group is killed by the runner), not the
session; Ctrl-C while waiting quits, like q.

While the student edits, the next check's grading process is already started and waiting
(`runner.Prepared`: torch, pytest and the graders loaded, the student's process forked and walled), so a save costs only
the checks themselves, not the second or more of importing torch. That process is forked from the
session's warm zygote (`kata.pool`, one for the whole session: watch runs one grading process at a time),
so a new one is ready a fraction of a second after each check, and costs a fork rather than another
import of torch; `KATA_POOL=0` starts each cold. A process that cannot grade (it died, or its zygote died
under it) leaves the file to a new one, from a fresh zygote, or cold where the pool cannot start one.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import queue
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import watchfiles

from kata import progress as prog
from kata import runner
from kata.course import Course, Kata
from kata.pool import Pool, PoolError, open_pool

POLL_MS = 500  # --poll: how often the file is looked at
MISSED_EVENT_S = 2.5  # a changed mtime with no event for this long: events do not work here
DEBOUNCE_MS = 150  # editors write a file in several steps


@dataclass
class _Event:
    kind: str  # "key", "saved", "missed", "error"
    value: str = ""


class _Keys(threading.Thread):
    """Single keypresses from the terminal (cbreak mode, so Ctrl-C still interrupts), or lines when
    stdin is not a terminal."""

    def __init__(self, events: queue.Queue, stream=None):
        super().__init__(daemon=True)
        self.events, self.stream = events, stream or sys.stdin
        self.restore = None
        try:
            self.fd = self.stream.fileno()
            self.tty = os.isatty(self.fd)
        except (AttributeError, OSError, ValueError):
            self.fd, self.tty = None, False
        if self.tty and os.name != "nt":
            import termios
            import tty

            saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)
            self.restore = lambda: termios.tcsetattr(self.fd, termios.TCSADRAIN, saved)

    def run(self) -> None:
        try:
            if self.tty and os.name == "nt":
                import msvcrt

                while True:
                    self.events.put(_Event("key", msvcrt.getwch().lower()))
            elif self.tty:
                while True:
                    data = os.read(self.fd, 1)
                    if not data:
                        break
                    self.events.put(_Event("key", data.decode("utf-8", "replace").lower()))
            else:
                for line in self.stream:
                    for char in line.strip().lower()[:1]:
                        self.events.put(_Event("key", char))
        except (OSError, ValueError):
            pass
        self.events.put(_Event("key", "eof"))

    def close(self) -> None:
        if self.restore is not None:
            with contextlib.suppress(Exception):
                self.restore()
            self.restore = None


class _Saves(threading.Thread):
    """Events for saves of one file (its folder is watched: editors often replace the file)."""

    def __init__(self, path: Path, events: queue.Queue, poll: bool, on_save=None):
        super().__init__(daemon=True)
        self.path, self.events, self.poll = path, events, poll
        self.on_save = on_save or (lambda: None)  # called from this thread, at once (a check may be running)
        self.stop = threading.Event()

    def run(self) -> None:
        name = self.path.name

        def only_this_file(change, where: str) -> bool:
            return Path(where).name == name

        try:
            for _ in watchfiles.watch(self.path.parent, watch_filter=only_this_file, debounce=DEBOUNCE_MS, step=50,
                                      stop_event=self.stop, raise_interrupt=False, recursive=False,
                                      force_polling=True if self.poll else None, poll_delay_ms=POLL_MS):
                self.events.put(_Event("saved", str(self.path)))
                self.on_save()
        except Exception as exc:  # a folder that vanished, no inotify watches left, ...
            self.events.put(_Event("error", f"watching {self.path.parent} failed: {exc}"))


class _Restart:
    """While a check runs (`with restart:`), a save restarts it. The saves thread sends the main thread
    SIGINT, as Ctrl-C does, so the runner ends the grading process group as it does on Ctrl-C; `requested`
    tells the two apart. A real signal, not `_thread.interrupt_main()` alone: it also ends the wait for a
    pooled unit, which blocks in `select`. Only the running check is interruptible, not the start of its
    process (`Pool.spawn` would then replace its zygote: seconds of importing torch again)."""

    SETTLE_S = 1.0  # an interrupt already sent lands within microseconds; this is a bound, not a wait

    def __init__(self):
        self.lock = threading.Lock()
        self.running = self.requested = False

    def __enter__(self) -> None:
        with self.lock:
            self.running, self.requested = True, False

    def __exit__(self, kind, value, traceback) -> None:
        with self.lock:
            self.running = False
            pending = self.requested and kind is None
        if pending:  # the check ended as the interrupt was sent: it lands here, not in the code after
            deadline = time.monotonic() + self.SETTLE_S
            while time.monotonic() < deadline:
                time.sleep(0.01)
            raise KeyboardInterrupt

    def saved(self) -> None:
        """A save (from the saves thread)."""
        with self.lock:
            if self.running and not self.requested:
                self.requested = True
                if hasattr(signal, "pthread_kill"):
                    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
                else:  # Windows: the interrupt lands when the wait next wakes
                    _thread.interrupt_main()


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


class Watcher:
    """One `kata watch` session. `run()` returns the exit code."""

    def __init__(self, course: Course, progress: prog.Progress, *, start: Kata | None = None, poll: bool = False,
                 device: str = "all", console=None, stdin=None):
        self.course, self.progress, self.poll, self.device = course, progress, poll, device
        self.start = start
        self.console = console
        self.stdin = stdin
        self.events: queue.Queue = queue.Queue()
        self.kata: Kata | None = None
        self.saves: _Saves | None = None
        self.pool: Pool | None = None  # the session's zygote (None with KATA_POOL=0)
        self.prepared: runner.Prepared | None = None  # the next check's process, started ahead
        self.result: runner.KataResult | None = None
        self.cancelled = False  # the last check was cancelled: there is no current verdict
        self.show_output = False
        self.listing = False  # the list of katas is on screen instead of the report (`l`)
        self.restart = _Restart()
        self.notes: list[str] = []  # about the current state: replaced with the next result
        self.advice: list[str] = []  # about the session (saves without events): kept
        self.hints_shown = 0
        self.known_mtime: int | None = None
        self.pending_since: float | None = None  # when a changed mtime was first seen without an event

    # ------------------------------------------------------------------ the session

    def run(self) -> int:
        from kata import render

        if self.console is None:
            from rich.console import Console

            self.console = Console(highlight=False)
        self.render = render
        kata = self.start or self._current()
        if kata is None:
            self.console.print("[green bold]Every kata is passed or skipped.[/] `kata goto ID` to revisit one.")
            return 0
        # One zygote: the session holds one grading process at a time (a second would sit idle, ~230 MB).
        with open_pool(self.course, 1) as self.pool:
            keys = _Keys(self.events, self.stdin)
            keys.start()
            try:
                self._switch(kata)
                return self._loop()
            finally:
                keys.close()
                if self.saves is not None:
                    self.saves.stop.set()
                self._unprepare()  # a pooled process holds the zygote: before the pool closes

    def _current(self) -> Kata | None:
        return prog.current_kata(self.course.katas, self.progress.load(), self.progress.current())

    def _following(self) -> Kata | None:
        """The next kata after the current one that is neither passed nor skipped (wrapping around)."""
        states = self.progress.load()
        katas = list(self.course.katas)
        start = katas.index(self.kata) + 1 if self.kata in katas else 0
        for kata in katas[start:] + katas[:start]:
            if kata is not self.kata and states.get(kata.id, prog.KataProgress()).status not in (prog.PASSED,
                                                                                                prog.SKIPPED):
                return kata
        return None

    def _prepare(self) -> None:
        """Start the next check's grading process now, while the student edits."""
        if self.prepared is None or not self.prepared.alive() or self.prepared.kata is not self.kata:
            self._unprepare()  # first: with one zygote, its process holds it
            self.prepared = self._new_prepared(self.kata)

    def _new_prepared(self, kata: Kata) -> runner.Prepared | None:
        try:
            return runner.prepare_kata(self.course, kata, devices=self.device, pool=self.pool)
        except PoolError:  # the zygote died, and so did its replacement: a cold process then
            return runner.prepare_kata(self.course, kata, devices=self.device)

    def _unprepare(self) -> None:
        if self.prepared is not None:
            self.prepared.close()
            self.prepared = None

    def _grade(self, kata: Kata, on_event=None) -> runner.KataResult:
        """The file graded by the prepared process, or by one prepared now where there is none for this kata
        (or it died). A process that went with its zygote while grading gave no result: a second one grades."""
        for _ in range(2):
            prepared, self.prepared = self.prepared, None
            if prepared is None or prepared.kata is not kata or not prepared.alive():
                if prepared is not None:
                    prepared.close()
                prepared = self._new_prepared(kata)
                if prepared is None:
                    break
            try:
                with self.restart:
                    result = prepared.run(on_event=on_event)
            except BaseException:
                prepared.close()
                raise
            if prepared.alive():  # refused before it was used (a syntax error, say): keep it for the next save
                self.prepared = prepared
            elif result is None:
                prepared.close()
            if result is not None:
                return result
        with self.restart:
            return runner.run_kata(self.course, kata, devices=self.device, on_event=on_event)

    def _switch(self, kata: Kata) -> None:
        if self.saves is not None:
            self.saves.stop.set()
        self._unprepare()
        self.kata, self.result, self.notes, self.hints_shown = kata, None, [], 0
        self.progress.set_current(kata.id)
        self.saves = _Saves(kata.exercise, self.events, self.poll, self.restart.saved)
        self.saves.start()
        self.known_mtime = _mtime(kata.exercise)
        self.pending_since = None
        self._check()

    def _loop(self) -> int:
        while True:
            try:
                done = self._step()
            except KeyboardInterrupt:  # a check catches its own: this one came while waiting
                self.console.print("\nBye.")
                return 0
            if done is not None:
                return done

    def _step(self) -> int | None:
        try:
            event = self.events.get(timeout=0.5)
        except queue.Empty:
            self._look_for_missed_save()
            return None
        if event.kind in ("saved", "missed"):
            self._check()
        elif event.kind == "error":
            self.advice.append(event.value + " (`kata watch --poll` looks for saves without events)")
            self._draw()
        elif event.kind == "key":
            return self._key(event.value)
        return None

    def _drain_saves(self) -> None:
        while True:
            try:
                event = self.events.get_nowait()
            except queue.Empty:
                return
            if event.kind != "saved":
                self.events.put(event)
                return

    def _look_for_missed_save(self) -> None:
        if self.kata is None:
            return
        now = _mtime(self.kata.exercise)
        if now == self.known_mtime:
            self.pending_since = None
            return
        if self.pending_since is None:
            self.pending_since = time.monotonic()
            return
        if time.monotonic() - self.pending_since < MISSED_EVENT_S:
            return
        self.known_mtime, self.pending_since = now, None
        if not self.poll and not self.advice:
            self.advice.append("Your save reached kata only by looking at the file's time: this file system sends "
                              "no change events (WSL on /mnt/c, a network drive, a container?). Run "
                              "`kata watch --poll` to see saves at once.")
        self.events.put(_Event("missed"))

    def _key(self, key: str) -> int | None:
        if key in ("q", "eof", "\x1b"):
            self.console.print("Bye.")
            return 0
        if key == "c":
            self._check()
        elif key == "n":
            following = self._following()
            if following is None:
                self.notes.append("Every other kata is passed or skipped." + (
                    "" if self._passed(self.kata) else f" Kata {self.kata.id} is the last one left."))
                if self._passed(self.kata):
                    self._all_done()
                else:
                    self._draw()
            else:
                self._switch(following)
        elif key == "h":
            tier = min(self.progress.get(self.kata.id).hints_used + 1, len(self.kata.hints))
            self.progress.record_hint(self.kata.id, tier)
            self.hints_shown, self.listing = tier, False
            self._draw()
        elif key == "l":
            self.listing = not self.listing
            self._draw()
        elif key == "o":
            self.show_output, self.listing = not self.show_output, False
            self._draw()
        return None

    def _passed(self, kata: Kata) -> bool:
        return self.progress.get(kata.id).status == prog.PASSED

    def _all_done(self) -> None:
        self.console.clear()
        self.render.progress_report(self.console, self.course, self.progress.load(), None)
        self.console.print("[green bold]All katas are passed or skipped.[/] q quits; `kata goto ID` revisits one.")

    # ------------------------------------------------------------------ checking and drawing

    def _check(self) -> None:
        kata = self.kata
        note = None
        while True:
            # From here until a result arrives there is no current verdict: the earlier one leaves the screen.
            self.result, self.cancelled, self.notes, self.listing = None, False, [], False
            self._drain_saves()  # this check reads the file as it is now: earlier saves are in it
            self.known_mtime, self.pending_since = _mtime(kata.exercise), None
            self.console.clear()
            self._header()
            if note:
                self.console.print(f"[yellow]{note}[/]")
            self.console.print(f"[dim]checking {self.render.relative(kata.exercise)}… (Ctrl-C cancels the check; "
                               "saving again restarts it)[/]")
            try:
                with self.render.CheckProgress(self.console, kata) as live:
                    result = self._grade(kata, live.event)
            except KeyboardInterrupt:
                if self.restart.requested:
                    note = "Saved while checking: the check starts again with the file as saved."
                    continue
                self.cancelled = True
                self._draw()
                self._prepare()
                return
            break
        if runner.not_recorded(kata, result, self.device) is None:
            self.progress.record_check(kata.id, result.passed, Path(result.file))
        self.result = result
        self._draw()
        self._prepare()

    def _header(self) -> None:
        kata = self.kata
        done = sum(self.progress.get(k.id).status == prog.PASSED for k in self.course.katas)
        self.console.print(f"[bold]kata watch[/] · {done}/{len(self.course.katas)} passed · "
                           f"[bold]{kata.id}[/] {kata.title}")

    def _draw(self) -> None:
        """The screen: the header, the report (or the list of katas) sized so that everything fits, the
        hints asked for, then the footer; a line stays free for the cursor."""
        console = self.console
        with console.capture() as capture:
            if self.hints_shown and not self.listing:  # asked for: it stays in view
                self.render.hint(console, self.kata, self.hints_shown, list(self.kata.hints[:self.hints_shown]),
                                 keys=True)
            self._footer()
        below = capture.get()
        with console.capture() as capture:
            self._header()
            if self.listing:
                self.render.kata_list(console, self.course, self.progress.load(), self.kata.id, one_line=True)
            else:
                self._report(room=console.size.height - 2 - below.count("\n"))
        console.clear()
        console.file.write(capture.get() + below)
        console.file.flush()

    def _report(self, room: int) -> None:
        if self.cancelled:
            self.console.print("[yellow]Check cancelled: no result.[/] Save the file or press c to check again.")
        if self.result is not None:
            kata = self.kata
            unmet = prog.unmet(self.course.prerequisites(kata), self.progress.load())
            self.render.check_result(self.console, self.course, kata, self.result, unmet,
                                     self.progress.get(kata.id).hints_used, show_output=self.show_output,
                                     keys=True, height=room)

    def _footer(self) -> None:
        """The lines that close every screen: notes, what comes next, the keys (with the state of `o`)."""
        for note in (self.advice[-1:] + self.notes)[-3:]:
            self.console.print(f"[yellow]{note}[/]")
        if self.result is not None and self.result.passed and not self.listing:
            following = self._following()
            if following is None:
                self.console.print("[green bold]That was the last one: every kata is passed or skipped.[/]")
            else:
                self.console.print(f"[green]Press n for the next kata: {following.id} {following.title}.[/]")
        mode = "polling every 0.5 s" if self.poll else "watching for saves"
        listing = "l back" if self.listing else "l list"
        output = "o output: on" if self.show_output else "o output: off"
        # One line of 80 columns at most.
        self.console.print(f"[dim]{mode} · n next · h hint · {listing} · {output} · c check · q quit[/]")
