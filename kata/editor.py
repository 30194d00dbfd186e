"""`kata edit`: which editor opens a file ($EDITOR, else $VISUAL, else the platform's usual one), and opening it."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path


class EditorError(Exception):
    """No editor could be found or started; the message says what to do."""


def editor_command(path: Path) -> list[str]:
    """The command line that opens `path`: $EDITOR, else $VISUAL, else a sensible default for the platform."""
    for variable in ("EDITOR", "VISUAL"):
        value = os.environ.get(variable, "").strip()
        if value:
            command = shlex.split(value, posix=os.name != "nt")
            if shutil.which(command[0]) is None:
                raise EditorError(f"${variable} is {value!r}, but {command[0]!r} is not a program on your PATH")
            return [*command, str(path)]
    defaults = (["notepad"],) if os.name == "nt" else (["open", "-t"],) if sys.platform == "darwin" else ()
    for command in (*defaults, ["nano"], ["vim"], ["vi"]):
        if shutil.which(command[0]):
            return [*command, str(path)]
    raise EditorError(f"no editor found: set EDITOR (e.g. `export EDITOR=nano`, or `code -w` for VS Code), "
                      f"or open {path} yourself")


def edit(path: Path) -> int:
    """Open `path` in the editor and wait for it to close; its exit status."""
    command = editor_command(path)
    try:
        return subprocess.call(command)
    except OSError as exc:
        raise EditorError(f"could not start {command[0]}: {exc}") from None
