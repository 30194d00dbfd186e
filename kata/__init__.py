"""transformer-katas: the package behind the `kata` command.

Layers, from the bottom up:

- `kata.course`    the course model: `course.toml` read and validated into plain data.
- `kata.stubs`     stubs derived from solutions (nbgrader's `### BEGIN SOLUTION` markers).
- `kata.earlier`   how a kata imports the pieces built in earlier katas.
- `kata.grading`   what runs inside the grading child process: the pytest plugin and the helpers
                   graders use (tensor-aware comparisons, diagnoses, forbidden built-ins).
- `kata.runner`    the parent side of grading: a child process, structured results, named outcomes.
- `kata.scoring`   how a kata's points are earned: weights, and the cap of a failed critical check.
- `kata.outcomes`  the words of a result every layer shares ("passed", ...) and the exit codes.
- `kata.progress`  persistence of a student's progress.
- `kata.workspace` a student's files: reset, restore, backups.
- `kata.render`    presentation with rich.
- `kata.doctor`, `kata.editor`  the set-up `kata doctor` checks; the editor `kata edit` opens.
- `kata.cli`       click commands, kept thin (what they share: `kata.cli_shared`).
"""

__version__ = "0.1.0"
