"""The grading engine: what runs in the sealed grading child process, and what isolates it.

The child (`child`) runs pytest over a kata's graders with the plugin (`plugin`), which turns each check
into a structured, signed result (`protocol`); the sandbox (`sandbox`, `guard`, `scan`, `capture`,
`limits`) keeps the student's code from changing the verdict, and `isolation` and `cgroup` put graded
units of `kata grade` in an operating-system sandbox. What a check's failure is lives in `failure`.
`zygote` is a warm process that has imported torch and forks one child per unit (`kata.pool`, its
parent side, is what `kata verify` grades through).

Grader authors write against the toolkit, `kata.toolkit`, not against this package. The `kata` command
imports `protocol`, `scan` and `zygote` (whose imports of torch happen in the zygote process) without
paying for `import torch`.
"""
