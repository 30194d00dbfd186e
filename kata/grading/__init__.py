"""The grading engine: what runs in the sealed grading child process, and what isolates it.

The child (`child`) runs pytest over a kata's graders with the plugin (`plugin`), which turns each check
into a structured, signed result (`protocol`); the sandbox (`sandbox`, `guard`, `scan`, `capture`,
`limits`) keeps the student's code from changing the verdict, and `isolation` and `cgroup` put graded
units of `kata grade` in an operating-system sandbox. What a check's failure is lives in `failure`.

Grader authors write against the toolkit, `kata.toolkit`, not against this package. The `kata` command
imports `protocol` and `scan` without paying for `import torch`.
"""
