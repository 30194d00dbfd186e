"""`kata train-demo`: your own Transformer learns a capstone task (the copy task, or `--task reverse`), trained by
your own code.

Everything is the student's: the Transformer of kata 9.9 (and the pieces under it, through
`kata.earlier` in its "own" mode: your exercises/ files), and the optimiser, schedule, loss,
train_step and greedy_decode of the capstone kata (course.toml's `capstone = true`: 9.10, its exercise.py
loaded by path). The data, model size and recipe are the task's (`kata.capstone`); the copy task's are the
ones the capstone's check uses, and its run with seed 0 is the one `kata viz` of the capstone draws.

    from rich.console import Console
    from kata.train_demo import train_demo
    summary = train_demo(Console(), seed=0)      # {"ok": True, "accuracy": 0.99, "task": "copy", ...}

A piece that is not written yet (NotImplementedError) or that raises is reported in one clear
message naming the kata, the file and the line; no traceback is printed.
"""

from __future__ import annotations

import importlib
import os
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kata import copy_task
from kata.course import Course, CourseError, load_course
from kata.earlier import MODE_VARIABLE, REFERENCE
from kata.student_code import CodeError, explain, load_kata_file, use_check_threads
from kata.viz.data import SEED as VIZ_SEED  # the seed of the run `kata viz` of the capstone draws

N_EXAMPLES = 6


def train_demo(console: Console, *, seed: int = 0, steps: int | None = None, task: str = copy_task.TASK.name) -> dict:
    """Train your own Transformer on a capstone task with your own training code; print progress and examples.

    Args:
        console: where to print (a rich Console).
        seed:    the seed of the model's initial weights, the training batches and the held-out set.
        steps:   training steps (default: the task's).
        task:    the name of a capstone task (copy_task.TASKS).

    Returns:
        {"ok", "accuracy", "token_accuracy", "seconds", "steps", "final_loss", "seed", "task", "target_accuracy",
        "error"}: ok is False (and error says why, the numbers None) when a piece of yours is missing or raised.
    """
    recipe = copy_task.TASKS[task]
    summary = {"ok": False, "accuracy": None, "token_accuracy": None, "seconds": None, "steps": None,
               "final_loss": None, "seed": seed, "task": task, "target_accuracy": recipe.target_accuracy,
               "error": None}
    try:
        try:
            course = load_course()
        except CourseError as exc:
            raise CodeError(str(exc)) from None
        if os.environ.get(MODE_VARIABLE) == REFERENCE:
            console.print(f"[yellow]note:[/] {MODE_VARIABLE}={REFERENCE} is set: the earlier katas' pieces are the "
                          "reference solutions, not yours")
        run = _train(console, course, recipe, seed, steps)
    except CodeError as exc:
        console.print(f"[bold red]train-demo stopped:[/] {exc}", highlight=False)
        summary["error"] = str(exc)
        return summary
    summary.update(ok=True, accuracy=run.accuracy, token_accuracy=run.token_accuracy, seconds=run.seconds,
                   steps=run.steps, final_loss=run.final_loss)
    if run.stopped:
        summary.update(ok=False, error=f"training stopped at step {run.steps}: {run.stopped}")
    return summary


def _train(console: Console, course: Course, task: copy_task.CopyTask, seed: int, steps: int | None):
    import torch  # here, not at the top: the `kata` command keeps torch out of its own start-up

    steps = task.steps if steps is None else steps
    use_check_threads()
    kata = course.capstone
    if kata is None:
        raise CodeError(f"{course.file} names no capstone kata (`capstone = true`): there is no training code to run")
    student = load_kata_file(course, kata, kata.exercise,
                             needs=("make_optimizer", "make_scheduler", "train_step", "greedy_decode"))
    try:
        earlier = importlib.import_module("kata.earlier.transformer")
        transformer, padding_mask = earlier.Transformer, earlier.padding_mask
    except Exception as exc:
        raise explain(exc, "importing your Transformer (kata 9.9) failed", course) from None

    try:
        probe = copy_task.build_model(transformer, task)
    except Exception as exc:
        raise explain(exc, "building your Transformer (kata 9.9) failed", course) from None
    n_params = sum(p.numel() for p in probe.parameters())
    del probe
    console.print(f"[bold]The {task.name} task[/] ({task.about}): {task.min_len}-{task.max_len} symbols out of "
                  f"{task.n_symbols}; your "
                  f"Transformer with d_model {task.d_model}, {task.n_layers}+{task.n_layers} layers, {task.n_heads} "
                  f"heads, d_ff {task.d_ff} ({n_params:,} parameters); up to {steps} steps of {task.batch_size} "
                  f"sequences (stopping once the validation accuracy reaches {task.stop_accuracy}), Noam warm-up "
                  f"{task.warmup_steps} steps, label smoothing {task.smoothing}; seed {seed}; "
                  f"torch {torch.__version__}, {torch.get_num_threads()} CPU thread(s)", highlight=False)

    progress = Progress(
        TextColumn("[bold]training"), BarColumn(), MofNCompleteColumn(),
        TextColumn("loss [cyan]{task.fields[loss]}"), TextColumn("lr [cyan]{task.fields[lr]}"),
        TextColumn("[cyan]{task.fields[speed]}[/] tokens/s"), TextColumn("validation [cyan]{task.fields[val]}"),
        TimeElapsedColumn(), console=console, transient=False)
    bar = progress.add_task("train", total=steps, loss="-", lr="-", speed="-", val="-")
    started = time.perf_counter()
    tokens = 0

    def on_step(step: int, loss: float, lr: float, n_tokens: int) -> None:
        nonlocal tokens
        tokens += n_tokens
        speed = tokens / max(time.perf_counter() - started, 1e-9)
        progress.update(bar, completed=step, loss=f"{loss:.3f}", lr=f"{lr:.2e}", speed=f"{speed:,.0f}")

    def on_eval(step: int, accuracy: float) -> None:
        progress.update(bar, val=f"{accuracy:.3f}")

    with progress:
        try:
            run = copy_task.train_copy_task(
                task, Transformer=transformer, padding_mask=padding_mask, make_optimizer=student.make_optimizer,
                make_scheduler=student.make_scheduler, train_step=student.train_step,
                greedy_decode=student.greedy_decode, seed=seed, steps=steps, on_step=on_step, on_eval=on_eval)
        except Exception as exc:
            raise explain(exc, "training or decoding failed", course) from None
        if run.steps < steps and not run.stopped:
            progress.update(bar, total=run.steps)  # stopped early: the bar ends full

    if run.stopped:
        console.print(f"[bold red]training stopped at step {run.steps}:[/] {run.stopped}", highlight=False)
    elif run.validation:
        val_step, val_accuracy = max(run.validation, key=lambda sv: (sv[1], -sv[0]))
        how = (f"stopped early at step {run.steps}: " if run.steps < steps else "")
        console.print(f"{how}validation accuracy {val_accuracy:.3f} at step {val_step} (the weights kept)",
                      highlight=False)
    _examples(console, run)
    colour = "green" if run.accuracy >= task.target_accuracy else "red"
    console.print(f"[bold]Held-out accuracy[/] (greedy, whole sequence, {task.n_heldout} sequences): "
                  f"[bold {colour}]{run.accuracy:.3f}[/]  token accuracy {run.token_accuracy:.3f}  final loss "
                  f"{run.final_loss:.3f} (floor {copy_task.smoothed_loss_floor(task):.3f})  "
                  f"{run.steps} steps in {run.seconds:.1f} s", highlight=False)
    if run.accuracy < task.target_accuracy:
        shorter = f" (this run had {run.steps} steps, the task's has {task.steps})" if run.steps < task.steps else ""
        if task.eval_padding:
            console.print(f"The {task.name} task asks for {task.target_accuracy}{shorter}. Its held-out sources carry "
                          f"{task.eval_padding} more pad columns than training had: a Transformer whose padding masks "
                          "let the encoder or the cross-attention read the padding fails here even when it copies "
                          f"(`kata check 9.9`); `kata check {kata.id}` checks the training code.", highlight=False)
        else:
            console.print(f"The capstone check asks for {task.target_accuracy}{shorter}: `kata check {kata.id}` "
                          "shows which piece is off.", highlight=False)
    elif task == copy_task.TASK and seed == VIZ_SEED and steps == task.steps:
        console.print(f"`kata viz {kata.id}` draws this run: its curves and the trained model's attention.",
                      highlight=False)
    return run


def _examples(console: Console, run) -> None:
    src, tgt = run.heldout
    right = copy_task.sequence_matches(run.predictions, tgt)
    table = Table(title="Held-out examples", show_lines=False)
    table.add_column("source")
    table.add_column("decoded")
    table.add_column("")
    for i in range(min(N_EXAMPLES, src.size(0))):
        ok = bool(right[i])
        table.add_row(copy_task.format_tokens(src[i]), copy_task.format_tokens(run.predictions[i]),
                      "[green]ok[/]" if ok else "[red]wrong[/]")
    console.print(table)
