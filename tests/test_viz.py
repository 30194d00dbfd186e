"""`kata viz`: every kind of picture drawn from the reference solutions (PNG size, not blank), the numbers
behind them, whose code draws (yours, the reference's, and why), --terminal, --json and usage errors."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import matplotlib
import numpy as np
import pytest
import torch
from click.testing import CliRunner
from matplotlib.image import imread

from kata import copy_task, earlier
from kata import progress as prog
from kata.cli import main
from kata.course import load_course
from kata.stubs import strip_markers
from kata.student_code import CodeError, load_reference
from kata.viz import data, draw, pictures, png, terminal
from kata.viz.figure import Heatmap, Lines
from tests.conftest import REPO
from tests.test_cli import kata_exe

PICTURES = [k.id for k in load_course(REPO).with_pictures]  # the katas with pictures, as course.toml says
KINDS = {"9.3": ["attention"], "9.4": ["attention"], "9.6": ["similarity", "signal"],
         "9.8": ["positional-encoding"], "9.10": ["schedule", "training", "copy-attention"]}


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread, as `kata viz` runs on a 2-core machine: more threads only wait for each other."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def drawings(one_thread) -> dict[str, draw.Drawing]:
    """Every kata's pictures, drawn by the reference (nothing is passed): the 9.10 capstone trains once here."""
    course = load_course(REPO)
    return {kid: draw.draw(course, course.find(kid), {}) for kid in PICTURES}


def reference(kata_id: str):
    """The reference solution's module of a kata, on the reference pieces."""
    course = load_course(REPO)
    return load_reference(course, course.find(kata_id), pictures.load(course.find(kata_id)).needs)


def solve(course, *kata_ids: str) -> None:
    for kata_id in kata_ids:
        kata = course.find(kata_id)
        kata.exercise.write_text(strip_markers(kata.solution.read_text()), encoding="utf-8")


def record_pass(course_root, course, kata_id: str) -> None:
    prog.Progress(prog.progress_path(course_root)).record_check(kata_id, True, course.find(kata_id).exercise)


def viz(*args: str):
    return CliRunner().invoke(main, ["viz", *args], catch_exceptions=False)


def test_every_kata_with_pictures_has_its_builder():
    course = load_course(REPO)
    builders = {kid: pictures.load(course.find(kid)) for kid in PICTURES}
    assert set(PICTURES) == set(builders) == set(KINDS)
    assert all(callable(b.build) and b.needs for b in builders.values())


def test_pictures_without_their_code_are_a_clear_error(course_root):
    kata = dataclasses.replace(load_course(course_root).find("9.4"), slug="rms-norm")  # a kata with no module
    with pytest.raises(CodeError, match=r"course.toml gives kata 9.4 pictures, but .*kata/viz/katas/rms_norm.py is "
                                        "missing"):
        pictures.load(kata)


def test_the_solutions_hold_the_katas_alone():
    """The reference solutions are the self-learner's textbook: the pictures' code lives beside the viz code."""
    for folder in (REPO / "solutions").iterdir():
        assert sorted(p.name for p in folder.iterdir() if p.name != "__pycache__") == ["solution.py"], folder
    assert all(pictures.pictures_file(load_course(REPO).find(k)).is_file() for k in PICTURES)


# The pictures: every kind, from the reference solutions.

@pytest.mark.parametrize(("kata_id", "name"), [(k, n) for k, names in KINDS.items() for n in names])
def test_every_kind_of_picture_is_a_real_png(drawings, tmp_path, kata_id, name):
    drawing = drawings[kata_id]
    assert [f.name for f in drawing.figures] == KINDS[kata_id]
    figure = next(f for f in drawing.figures if f.name == name)
    [path] = png.save([figure], tmp_path)
    assert path == tmp_path / f"{name}.png" and path.stat().st_size > 20_000
    pixels = imread(path)[..., :3]  # (height, width, rgb), floats in [0, 1]
    height, width = pixels.shape[:2]
    assert 1200 <= width <= 1800 and 400 <= height <= 1400
    colours = np.unique((pixels * 255).round().astype(np.int64) @ np.array([1 << 16, 1 << 8, 1]))
    assert pixels.std() > 0.1 and len(colours) > 200, "not blank"
    # Not the student's code: titled so, and framed in red.
    assert figure.reference and figure.whose.startswith("REFERENCE solution (solutions/")
    assert figure.title.startswith(f"Kata {kata_id} · ")
    red = (np.abs(pixels - np.array([0xC6, 0x28, 0x28]) / 255).max(axis=-1) < 0.05)  # (height, width)
    assert red[:, :8].any(axis=1).mean() > 0.95 and red[:8, :].any(axis=0).mean() > 0.95


def test_the_terminal_draws_every_kind(drawings):
    from rich.console import Console

    for drawing in drawings.values():
        console = Console(record=True, width=110, color_system=None)
        terminal.show(console, drawing)
        text = console.export_text()
        for figure in drawing.figures:
            assert figure.title[:40] in text
            for panel in figure.panels:
                assert panel.title in text
        assert max(len(line) for line in text.splitlines()) <= 110
        assert "REFERENCE solution's pictures, not your code" in text


# The numbers behind them.

def test_attention_rows_sum_to_one_and_the_causal_mask_hides_the_future():
    module = reference("9.3")
    words, x = data.sentence(64)
    head = module.AttentionHead(64, 16)
    plain = data.head_weights(head, x)
    masked = data.head_weights(head, x, data.causal(len(words)))
    assert plain.shape == masked.shape == (10, 10)
    torch.testing.assert_close(plain.sum(-1), torch.ones(10))
    torch.testing.assert_close(masked.sum(-1), torch.ones(10))
    assert (masked.triu(1) == 0).all() and masked[0, 0] == 1
    # No positions: both "the"s are one vector, so every query gives them the same weight.
    assert words[0] == words[4] == "the"
    torch.testing.assert_close(plain[:, 0], plain[:, 4])


def test_every_head_has_its_own_pattern(drawings):
    [figure] = drawings["9.4"].figures
    maps = [p.values for p in figure.panels[1:]]
    assert [p.title for p in figure.panels[1:]] == [f"untrained head {h}" for h in range(1, 5)]
    assert len(maps) == 4 and all(m.shape == (10, 10) for m in maps)
    assert all(np.allclose(m.sum(axis=-1), 1) for m in maps)
    assert not np.allclose(maps[0], maps[1])


def test_beside_the_untrained_heads_a_hand_set_head_attends_to_the_previous_word(drawings):
    [figure] = drawings["9.4"].figures
    handset = figure.panels[0]
    assert handset.title == "hand-set head 1: the previous word" and handset.vmax == 1.0
    weights = handset.values  # (10, 10): rows are queries
    np.testing.assert_allclose(weights.sum(axis=-1), 1)
    assert weights.argmax(axis=1).tolist() == [0, 0, 1, 2, 3, 4, 5, 6, 7, 8]  # the first word takes itself
    assert weights[np.arange(1, 10), np.arange(0, 9)].min() > 0.9  # sharply, not just the largest weight
    # Built with the student's (here the reference's) own class: only head 1's weights were set by hand.
    mha = reference("9.4").MultiHeadAttention(64, 4)
    data.set_previous_word_head(mha, 64, 16)
    assert (mha.w_q.weight[:16, :48] == 0).all() and (mha.w_k.weight[:16, 48:] == torch.eye(16)).all()


def test_heat_maps_with_their_own_colour_bars_keep_their_own_labels(drawings):
    """9.8: the middle panel (its own scale) shows its y label, clear of the left panel's colour bar label;
    9.4: the hand-set head gets its own colour bar, the untrained heads share one and their row labels."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    [encoding] = drawings["9.8"].figures
    with matplotlib.rc_context(png.STYLE):
        fig = png._draw(encoding)
        FigureCanvasAgg(fig).draw()
    table, middle = fig.axes[0], fig.axes[1]
    assert table.get_ylabel() == middle.get_ylabel() == "position"
    bars = [ax for ax in fig.axes[3:] if ax.get_ylabel()]  # the colour bars, labelled on their long side
    assert [ax.get_ylabel() for ax in bars] == ["value", "dot product PE[p] . PE[q]"]
    left_bar_label = bars[0].yaxis.label.get_window_extent()
    assert not left_bar_label.overlaps(middle.yaxis.label.get_window_extent())
    [heads] = drawings["9.4"].figures
    with matplotlib.rc_context(png.STYLE):
        fig = png._draw(heads)
    labels = [ax.get_ylabel() for ax in fig.axes[:5]]
    assert labels == ["query", "query", "", "", ""]
    assert [ax.get_ylabel() for ax in fig.axes[5:]] == ["attention weight", "attention weight"]


def test_without_residual_connections_the_words_collapse():
    module = reference("9.6")
    words, x = data.sentence(64)
    torch.manual_seed(0)
    blocks = list(module.Encoder(10, 64, 4, 256, dropout=0.0).double().eval().layers)
    kept = data.through_blocks(blocks, x.double(), residual=True, norm_first=False)  # (11, n, d_model)
    lost = data.through_blocks(blocks, x.double(), residual=False, norm_first=False)
    assert kept.shape == lost.shape == (11, len(words), 64)
    assert data.token_spread(kept)[-1] > 1 and data.token_spread(lost)[-1] < 1e-9
    assert data.cosine_similarity(lost[-1]).min() > 1 - 1e-9
    # Post-norm ends each block with a LayerNorm: the norm is sqrt(d_model) with and without the residuals.
    sqrt_d_model = torch.full((10,), 8.0, dtype=torch.float64)
    torch.testing.assert_close(data.token_norm(kept[1:]), sqrt_d_model, rtol=0, atol=0.01)
    torch.testing.assert_close(data.token_norm(lost[1:]), sqrt_d_model, rtol=0, atol=0.01)


def test_the_offset_picture_reads_positions_of_the_table_drawn(drawings):
    [figure] = drawings["9.8"].figures
    table, _, offsets = figure.panels
    n_positions = table.values.shape[0]
    for series in offsets.series:
        p = int(series.label.removeprefix("p = "))
        assert p + series.x.min() >= 0 and p + series.x.max() < n_positions, series.label
    assert figure.title.endswith(f"sinusoidal_positional_encoding({n_positions}, 128)")


def test_the_dot_product_of_positions_depends_on_the_offset_alone():
    module = reference("9.8")
    pe = module.sinusoidal_positional_encoding(201, 128).double()
    offsets = list(range(-50, 51))
    dots = data.offset_dot_products(pe, [50, 100, 150], offsets)  # (3, 101)
    assert dots.argmax(dim=1).tolist() == [50, 50, 50]  # offset 0
    torch.testing.assert_close(dots[:, 50], torch.full((3,), 64.0, dtype=torch.float64))  # d_model / 2
    torch.testing.assert_close(dots, dots.flip(1))  # symmetric in k
    torch.testing.assert_close(dots[0], dots[2])  # the same from every position


def test_the_noam_schedule_peaks_at_the_end_of_the_warm_up():
    module = reference("9.10")
    steps = list(range(1, 2001))
    rates = data.noam_curve(module.noam_lr, steps, 512, 500)
    assert int(rates.argmax()) + 1 == 500
    assert rates[499] == pytest.approx((512 * 500) ** -0.5)


def test_the_learning_rate_curve_explains_its_first_flat_step(drawings):
    _, training, _ = drawings["9.10"].figures
    lr = training.panels[2]
    rates, first_two = lr.series
    assert rates.y[0] == rates.y[1] < rates.y[2]  # the flat step: step 0 counts as step 1
    assert first_two.x.tolist() == [1, 2] and first_two.y.tolist() == rates.y[:2].tolist()
    assert "step 0 counts as step 1" in first_two.label and "step 0 counts as step 1" in training.look_for


def test_kata_viz_draws_the_run_train_demo_makes_with_the_same_seed(drawings):
    """One seed, one run: the picture's numbers are those of the run `kata train-demo --seed 0` makes
    (train_demo calls copy_task.train_copy_task with the task, the pieces and the seed, and no watch_every)."""
    pieces = reference("9.10")
    run = copy_task.train_copy_task(
        copy_task.TASK, Transformer=pieces.Transformer, padding_mask=pieces.padding_mask,
        make_optimizer=pieces.make_optimizer, make_scheduler=pieces.make_scheduler, train_step=pieces.train_step,
        greedy_decode=pieces.greedy_decode, seed=data.SEED)
    _, training, _ = drawings["9.10"].figures
    loss, accuracy, _ = training.panels
    assert loss.series[0].y.tolist() == run.losses
    assert f"Held-out accuracy: {run.accuracy:.3f} after {run.steps} steps" in training.look_for
    decided = accuracy.series[1]
    assert list(zip(decided.x.tolist(), decided.y.tolist(), strict=True)) == run.validation
    assert f"seed {data.SEED}" in training.title and f"kata train-demo --seed {data.SEED}" in training.look_for


def test_the_trained_copy_model_attends_along_the_diagonal(drawings):
    _, training, attention = drawings["9.10"].figures
    loss, accuracy, lr = training.panels
    assert isinstance(loss, Lines) and loss.series[0].y[-1] < loss.series[0].y[0] / 3
    assert accuracy.series[0].y[-1] >= 0.9 and accuracy.series[0].y[0] < 0.5  # it learned, in these steps
    assert len(lr.series[0].y) == len(loss.series[0].y)
    cross = [p for p in attention.panels if p.title.startswith("cross-attention")]
    assert len(cross) == 4 and all(isinstance(p, Heatmap) for p in cross)
    mean = np.mean([p.values for p in cross], axis=0)  # (tgt_len, src_len)
    n_src = mean.shape[1]
    assert mean.shape[0] == n_src + 1  # <bos> and every symbol
    # Row t (after <bos> and t symbols) must find source position t: the diagonal.
    assert (mean[:n_src].argmax(axis=1) == np.arange(n_src)).mean() >= 0.8
    assert all(np.allclose(np.triu(p.values, 1), 0) for p in attention.panels if p.title.startswith("masked"))


# Whose code draws.

def test_a_fresh_student_gets_the_reference_pictures_labelled_as_such(course_root, course):
    result = viz("9.4")
    assert result.exit_code == 0
    out = " ".join(result.output.split())
    assert "REFERENCE solution's pictures, not your code" in out and "not passing yet" in out
    assert "`kata check 9.4`" in out and "exercises/9.4-multi-head-attention/viz/attention.png" in out
    assert (course.find("9.4").exercise_dir / "viz" / "attention.png").stat().st_size > 20_000


def test_a_passed_kata_is_drawn_by_your_own_code(course_root, course, monkeypatch):
    solve(course, "9.1", "9.3", "9.4")  # 9.4 runs on your own 9.3, which runs on your own 9.1
    record_pass(course_root, course, "9.4")
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # Python's default, as on a student's laptop
    result = viz("9.4", "--json", "--out", str(course_root / "pictures"))
    assert result.exit_code == 0
    assert not list((course_root / "exercises").rglob("__pycache__")), "no bytecode in the student's folders"
    report = json.loads(result.output)
    assert report["schema"] == "kata.viz/1" and report["kata"] == "9.4"
    assert report["whose"] == "yours" and report["error"] is None and "passes" in report["why"]
    [picture] = report["pictures"]
    assert picture["name"] == "attention" and picture["path"] == str(course_root / "pictures" / "attention.png")
    drawing = draw.draw(course, course.find("9.4"), prog.Progress(prog.progress_path(course_root)).load())
    [figure] = drawing.figures
    assert not figure.reference
    assert figure.whose == "Your MultiHeadAttention: exercises/9.4-multi-head-attention/exercise.py"


def test_a_file_changed_since_it_passed_is_not_yours(course_root, course):
    solve(course, "9.1", "9.3")
    record_pass(course_root, course, "9.3")
    exercise = course.find("9.3").exercise
    exercise.write_text(exercise.read_text() + "\n# an edit\n")
    report = json.loads(viz("9.3", "--json").output)
    assert report["whose"] == "reference" and "changed since it passed" in report["why"]


def test_when_your_code_raises_the_reference_draws_and_your_line_is_named(course_root, course):
    solve(course, "9.1", "9.4")  # 9.4 passes, but it runs on your own 9.3: still the stub
    record_pass(course_root, course, "9.4")
    report = json.loads(viz("9.4", "--json").output)
    assert report["whose"] == "reference"
    assert "of kata 9.3 is not implemented yet" in report["error"]
    assert "exercises/9.3-attention/exercise.py:" in report["error"] and "`kata check 9.3`" in report["error"]
    assert report["error"] in report["why"]


def test_a_broken_contract_is_named(course_root, course):
    exercise = course.find("9.8").exercise
    exercise.write_text(strip_markers(course.find("9.8").solution.read_text()).replace(
        "    return pe.to(torch.get_default_dtype())", "    return pe.to(torch.get_default_dtype()).T"))
    record_pass(course_root, course, "9.8")
    report = json.loads(viz("9.8", "--json").output)
    assert report["whose"] == "reference"
    assert "should be a tensor of shape (200, 128); got (128, 200)" in report["error"]


# The command.

def test_the_terminal_draws_in_the_real_executable(course_root, course):
    result = subprocess.run([kata_exe(), "viz", "9.3", "--terminal"], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "COLUMNS": "100"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert "self-attention, no mask" in result.stdout and "the cat sat on  the mat bec it  was tir" in result.stdout
    assert "█" in result.stdout and "REFERENCE" in result.stdout and "Traceback" not in result.stderr
    assert not (course.find("9.3").exercise_dir / "viz").exists(), "--terminal writes no PNG"


def test_usage_errors(course_root):
    no_pictures = CliRunner().invoke(main, ["viz", "9.1"])
    assert no_pictures.exit_code == 2
    assert "kata 9.1 has no pictures" in no_pictures.output
    assert all(kid in no_pictures.output for kid in PICTURES)
    unknown = CliRunner().invoke(main, ["viz", "7.7"])
    assert unknown.exit_code == 2 and "no kata '7.7'" in unknown.output
    both = CliRunner().invoke(main, ["viz", "9.4", "--terminal", "--json"])
    assert both.exit_code == 2 and "--terminal" in both.output


def test_resolving_switches_the_earlier_pieces_and_puts_everything_back(monkeypatch):
    monkeypatch.delenv(earlier.MODE_VARIABLE, raising=False)
    before = {name for name in sys.modules if name.startswith("kata.earlier.")}
    with earlier.resolving(earlier.REFERENCE):
        import kata.earlier.softmax as softmax

        assert softmax.__file__.endswith("solutions/9.1-softmax/solution.py")
        assert os.environ[earlier.MODE_VARIABLE] == earlier.REFERENCE
    assert earlier.MODE_VARIABLE not in os.environ
    assert {name for name in sys.modules if name.startswith("kata.earlier.")} == before
