"""Reading a kata: `kata show` renders the READMEs' LaTeX as Unicode text (the files keep their LaTeX), and
`kata hint` / `kata check` stop offering "the next hint" once every tier is shown."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from kata.course import load_course
from kata.math_text import latex_to_text, render_math
from tests.conftest import REPO
from tests.test_cli import kata_exe

KATAS = [k.id for k in load_course(REPO).katas]
LATEX_LEFT = re.compile(r"\$|\\[A-Za-z]+|\\[,!;]|\\\\")  # a $ delimiter, a macro (\frac, \mathrm), \, or \\


def kata(*args: str, columns: int = 200) -> subprocess.CompletedProcess:
    return subprocess.run([kata_exe(), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": str(columns)})


def test_show_renders_softmax_math_in_the_real_executable(course_root):
    result = kata("show", "9.1")
    assert result.returncode == 0, result.stderr
    assert "softmax(x)_i = e^(x_i)/(∑_j e^(x_j))" in result.stdout
    # Grouping survives the flattening: the shifted numerator and denominator keep their brackets.
    assert "e^(x_i - c)/(∑_j e^(x_j - c)) = (e^(-c) e^(x_i))/(e^(-c)∑_j e^(x_j)) = softmax(x)_i" in result.stdout
    assert "$$" not in result.stdout and "\\frac" not in result.stdout
    # The source keeps its LaTeX, for GitHub and notebooks.
    assert "$$\\mathrm{softmax}(x)_i = \\frac{e^{x_i}}{\\sum_j e^{x_j}}$$" in (
        course_root / "exercises" / "9.1-softmax" / "README.md").read_text()


@pytest.mark.parametrize("kata_id", KATAS)
def test_no_kata_shows_raw_latex(course_root, kata_id):
    """Outside code (which keeps its backslashes and dollars as written), no LaTeX is left on screen."""
    readme = (course_root / "exercises").glob(f"{kata_id}-*/README.md")
    code = "".join(re.findall(r"```.*?```|`[^`]*`", next(readme).read_text(), re.DOTALL))
    result = kata("show", kata_id)
    assert result.returncode == 0, result.stderr
    left = [m for m in LATEX_LEFT.findall(result.stdout) if m not in code]
    assert not left, f"raw LaTeX in `kata show {kata_id}`: {left}"


@pytest.mark.parametrize(("latex", "text"), [
    (r"\mathrm{lrate} = \mathrm{factor}\cdot d_{\mathrm{model}}^{-0.5}",
     "lrate = factor · d_model^(-0.5)"),
    (r"\mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V", "softmax((Q K^⊤)/√(d_k)) V"),
    (r"\ell = -\sum_c q_c \log p_c", "ℓ = -∑_c q_c log p_c"),
    (r"\mathrm{KL}(q\,\|\,p)", "KL(q ‖ p)"),
    (r"\mathrm{mask}_{ij} = \begin{cases}\text{True} & j \le i\\ \text{False} & j > i\end{cases}",
     "mask_ij = { True if j ≤ i; False if j > i }"),
    (r"\begin{pmatrix} \cos\omega k & \sin\omega k \\ -\sin\omega k & \cos\omega k \end{pmatrix}",
     "[cos ω k, sin ω k; -sin ω k, cos ω k]"),
])
def test_formulas_read_as_text(latex, text):
    assert latex_to_text(latex) == text


def test_code_is_left_alone_and_math_is_escaped_for_markdown():
    markdown = ("Take `x.var(unbiased=False)` and $x_i$ over $d$, not `$d - 1$`:\n\n"
                "```python\ncost = \"$5\"  # $not math$\n```\n\n$$a_{1} * b_{2}$$\n")
    rendered = render_math(markdown)
    assert "`x.var(unbiased=False)`" in rendered and "`$d - 1$`" in rendered
    assert '```python\ncost = "$5"  # $not math$\n```' in rendered
    assert r"x\_i over d" in rendered  # escaped: Markdown shows x_i, never italics
    assert "\n> a\\_1 \\* b\\_2\n" in rendered  # a display formula is a block of its own


def test_hints_stop_offering_a_next_one_after_the_last(course_root):
    tiers = len(load_course(course_root).find("9.1").hints)
    for tier in range(1, tiers):
        out = " ".join(kata("hint", "9.1").stdout.split())
        assert f"`kata hint 9.1` again for hint {tier + 1} of {tiers}" in out
    for _ in range(2):  # the last tier, then asked again
        out = " ".join(kata("hint", "9.1").stdout.split())
        assert f"Hint {tiers} of {tiers}" in out and "there is no next one" in out and "again for" not in out


def test_a_failing_check_offers_hints_only_while_there_are_some(course_root):
    first = " ".join(kata("check", "9.1").stdout.split())
    assert "Stuck? kata hint 9.1 reveals hint 1 of 3." in first
    for _ in range(3):
        kata("hint", "9.1")
    after = " ".join(kata("check", "9.1").stdout.split())
    assert "reveals hint" not in after and "next hint" not in after
    assert "You have seen every hint (kata hint 9.1 shows them again); kata solution 9.1 shows the reference." in after


@pytest.mark.skipif(shutil.which("tmux") is None or shutil.which("less") is None, reason="needs tmux and less")
def test_a_long_kata_is_paged_from_its_start_in_a_terminal(course_root):
    """The capstone's README is many screens long: in a terminal it starts at its title, in a pager."""
    from tests.test_student_terminal import Tmux, terminal_env

    tmux = Tmux(f"{kata_exe()} show 9.10", course_root, {**terminal_env(course_root), "PAGER": ""})  # less
    try:
        first = tmux.wait_for(r"Kata 9\.10: training")
        assert "[exited" not in first, "the pager waits for the reader"
        assert first.splitlines()[-1].startswith(":"), "less's prompt"
        tmux.send("q")
        tmux.wait_for(r"\[exited 0\]")
    finally:
        tmux.close()
    title = "Kata 9.10: training: warm-up, label smoothing, greedy decoding, a copy task"
    assert first.splitlines()[0].strip() == title
