"""The student's process: forked by the judge before any grader or reference is loaded there, it builds its
walls (`walls`), runs the student's code (`load`, with the forbidden built-ins' advisory guard, `guard`) and
answers the judge's requests about it (`serve`). Nothing it says decides a grade. It never imports the judge,
the toolkit or pytest's plugin."""
