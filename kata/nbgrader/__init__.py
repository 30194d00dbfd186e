"""The course for instructors who grade with nbgrader, and as notebooks for students who prefer them.

- `notebook`: pure functions from a kata to nbformat notebooks (nbgrader source notebooks with
  solution regions and hidden tests; student notebooks that end by running `kata check`);
- `config`: the exported course's `nbgrader_config.py`;
- `export`: `kata nbgrader export DIR` and `kata notebook ID [DIR]`;
- `runtime`: what runs in a notebook's kernel: the grade cell's grading and the student notebook's check;
- `kernel`: an IPython extension that, during `nbgrader autograde`, runs only the grade cells;
- `cli`: the commands.

Only `runtime` and `kernel` run inside notebooks; they import neither torch nor nbgrader.
"""
