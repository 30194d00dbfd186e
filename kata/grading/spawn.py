"""Starting the student's process: a fork of the judge, made before any grader or reference is loaded here.

The judge (`kata.grading.child`) has imported torch (and, forked from a warm zygote, pytest and hypothesis:
public code), but no grader, no reference solution of this kata and no hidden file, and has run no
tensor operation (a fork after one is not safe). It forks now; the child becomes the student's process
(`kata.student.serve`), which builds its walls and says it is ready with what they are. The judge then
sets itself undumpable, so a process of the same user (the student's, where it could see this one) can
neither trace it nor read its memory, and goes on loading the graders while the student's process builds its
walls.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import traceback

from kata.course import Course, Kata
from kata.grading import isolation
from kata.student import serve  # imported here, before the fork: the child runs it at once
from kata.toolkit.remote import Process, Session
from kata.wire.frames import Channel

REPLY_HEADER_CAP = 64 * 1024 * 1024  # what one answer of the student's process may hold, at most
REPLY_BUFFER_CAP = 1024 * 1024 * 1024


def earlier_sources(course: Course, kata: Kata) -> dict[str, tuple[str, str]]:
    """The reference sources of the katas before `kata`: what `kata.earlier` gives its code while grading."""
    return {k.module_name: (str(k.solution), k.solution.read_text(encoding="utf-8"))
            for k in course.katas[:course.index(kata)]}


def hidden_paths(course: Course, graders: str | None) -> list[str]:
    """What the student's process must not see where it has a mount namespace: every kata's graders and
    reference solutions (the earlier ones it is given arrive as text), and another graders folder."""
    paths = [str(course.root / "graders"), str(course.root / "solutions")]
    return paths + ([graders] if graders else [])


def start(course: Course, kata: Kata, filename: str, *, graders: str | None = None, memory_mb: int | None = None,
          output_limit: int = 4000) -> Session:
    """Fork the student's process for grading `kata` (its code will come as the file `filename`); the judge's
    end of it. The process builds its walls meanwhile: the session waits for its word that it is ready (and
    what its walls are) at its first request (`Session.ready`)."""
    ours, theirs = socket.socketpair()
    config = dict(filename=filename, kata_id=kata.id, forbidden=tuple(kata.forbidden),
                  earlier=earlier_sources(course, kata), hidden=hidden_paths(course, graders), memory_mb=memory_mb,
                  output_limit=output_limit)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            ours.close()
            status = serve.main(theirs, **config)
        except BaseException:
            traceback.print_exc()
        finally:
            with contextlib.suppress(BaseException):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(status)
    theirs.close()
    isolation.undumpable()
    channel = Channel(ours, max_header=REPLY_HEADER_CAP, max_total=REPLY_BUFFER_CAP)
    return Session(channel, Process(pid, pid), filename=filename, output_limit=output_limit)
