"""The words every layer uses about a result, each defined once, and the exit codes of `kata`.

"passed" is a check's status (the grading child's records, `kata.grading.protocol`), a kata's outcome
(`kata.runner`) and a kata's status in the progress file (`kata.progress`): one word, one definition.
Plain constants, no imports: the grading child, the runner and the commands all read them.
"""

PASSED = "passed"  # a check, a kata's outcome, a kata in the progress file
FAILED = "failed"  # a check (a grader's assertion about the student's results failed), a kata's outcome
NOT_IMPLEMENTED = "not-implemented"  # the stub's NotImplementedError: a check, a kata's outcome

# Exit codes of `kata check` (documented in docs/students.md); the other commands use 0, 1, 2 and 130.
EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2  # a usage or course error
EXIT_TIMEOUT = 3
EXIT_CRASH = 4
EXIT_INTERNAL = 5
EXIT_INTERRUPTED = 130  # Ctrl-C (or SIGTERM, SIGHUP where `kata grade` asks for it)
