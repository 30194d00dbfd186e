"""A student's files: put the stub back, restore their work, and never lose it.

Every operation that would overwrite an exercise first copies it to
`.kata-backups/<id>-<slug>/exercise-<timestamp>.py` (unless the file already equals what replaces it).
`reset_all` first copies every exercise (and the progress file) into one folder,
`.kata-backups/all-<timestamp>/`, laid out like the course, so that one copy command undoes it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from kata.course import Course, Kata
from kata.stubs import derive_stub

BACKUP_DIR = ".kata-backups"


@dataclass
class Change:
    kata: str
    file: str
    changed: bool
    backup: str | None  # where the previous content went, if anywhere
    restored_from: str | None = None


def backup_dir(course: Course, kata: Kata) -> Path:
    return course.root / BACKUP_DIR / kata.dirname


def backups(course: Course, kata: Kata) -> list[Path]:
    """The kata's backups, oldest first."""
    return sorted(backup_dir(course, kata).glob("exercise-*.py"))


def stub_text(kata: Kata) -> str:
    return derive_stub(kata.solution.read_text(encoding="utf-8"), filename=str(kata.solution))


def backup(course: Course, kata: Kata) -> Path | None:
    """Copy the exercise to a new timestamped backup; None if there is no file to keep."""
    if not kata.exercise.is_file():
        return None
    folder = backup_dir(course, kata)
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    target = folder / f"exercise-{stamp}.py"
    shutil.copy2(kata.exercise, target)
    return target


def _replace(course: Course, kata: Kata, text: str) -> tuple[bool, Path | None]:
    current = kata.exercise.read_text(encoding="utf-8") if kata.exercise.is_file() else None
    if current == text:
        return False, None
    # The untouched stub can always be derived again, so only the student's own work is backed up.
    saved = backup(course, kata) if current is not None and current != stub_text(kata) else None
    kata.exercise.parent.mkdir(parents=True, exist_ok=True)
    kata.exercise.write_text(text, encoding="utf-8")
    return True, saved


def reset(course: Course, kata: Kata) -> Change:
    """Put the stub back; the student's file goes to a backup first."""
    changed, saved = _replace(course, kata, stub_text(kata))
    return Change(kata.id, str(kata.exercise), changed, str(saved) if saved else None)


def restore(course: Course, kata: Kata, source: Path | None = None) -> Change:
    """Bring back a backup (the newest by default), backing up what is there now."""
    available = backups(course, kata)
    if source is None:
        if not available:
            raise FileNotFoundError(f"no backups of kata {kata.id} in {backup_dir(course, kata)}")
        source = available[-1]
    text = Path(source).read_text(encoding="utf-8")
    changed, saved = _replace(course, kata, text)
    return Change(kata.id, str(kata.exercise), changed, str(saved) if saved else None, str(source))


@dataclass
class ResetAll:
    folder: str | None  # the one backup of everything, or None when there was nothing to keep
    changes: list[Change] = field(default_factory=list)


def reset_all(course: Course, progress_file: Path | None = None) -> ResetAll:
    """Put every stub back, after copying every exercise (and the progress file) into one folder."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    folder = course.root / BACKUP_DIR / f"all-{stamp}"
    kept = 0
    for kata in course.katas:
        if kata.exercise.is_file():
            target = folder / kata.exercise.relative_to(course.root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(kata.exercise, target)
            kept += 1
    if progress_file is not None and progress_file.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(progress_file, folder / progress_file.name)
        kept += 1
    result = ResetAll(str(folder) if kept else None)
    for kata in course.katas:
        text = stub_text(kata)
        current = kata.exercise.read_text(encoding="utf-8") if kata.exercise.is_file() else None
        changed = current != text
        if changed:
            kata.exercise.parent.mkdir(parents=True, exist_ok=True)
            kata.exercise.write_text(text, encoding="utf-8")
        saved = folder / kata.exercise.relative_to(course.root)
        result.changes.append(Change(kata.id, str(kata.exercise), changed,
                                     str(saved) if changed and saved.is_file() else None))
    return result
