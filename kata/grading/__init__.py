"""The judge: the trusted process that grades, and what starts and isolates the units it grades in.

The judge (`child`) forks the student's process (`spawn`; the student's side is `kata.student`) before any
grader or reference is loaded, then runs pytest over the kata's graders with the plugin (`plugin`), which
asks the student's process for what the checks need (`kata.toolkit.remote`, over `kata.wire`) and writes
each check's result as a structured record (`protocol`). No line of the student's code runs in it. What a
check's failure is lives in `failure`; the forbidden built-ins are read from the source in `scan`.
`isolation` and `cgroup` put a graded unit of `kata grade` in an operating-system sandbox and a memory cgroup.
`zygote` is a warm process that has imported torch and forks one judge per unit (`kata.pool`, its parent side).

Grader authors write against the toolkit, `kata.toolkit`, not against this package. The `kata` command
imports `protocol`, `scan` and `zygote` (whose imports of torch happen in the zygote process) without
paying for `import torch`.
"""
