"""`kata new`: a new kata scaffolded into a copy of the course, what `kata verify` then says is missing,
and the same kata, once its author has written it, proved sound."""

from __future__ import annotations

import hashlib
import json
import subprocess

import pytest

from kata.course import load_course
from kata.scaffold import TODO
from kata.stubs import derive_stub
from tests.test_cli import kata_exe

SOLUTION = '''"""Kata 9.11: RMS normalisation: x / sqrt(mean(x^2) + eps) over the last dimension."""

import torch


def rms_norm(x: torch.Tensor) -> torch.Tensor:
    """x / sqrt(mean(x^2, last dim) + 1e-6); x: (batch, seq, d_model) -> the same shape."""
    ### BEGIN SOLUTION
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    ### END SOLUTION
'''
MISTAKES = {
    "in_place.py": ('"""Planted mistake: x divided in place."""\n# expect: modifies-input\n\n\n'
                    "def rms_norm(x):\n    return x.div_(torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))\n"),
    "mean_not_rms.py": ('"""Planted mistake: divided by the mean."""\n# expect: failed\n\n\n'
                        "def rms_norm(x):\n    return x / (x.mean(-1, keepdim=True) + 1e-6)\n"),
    "no_root.py": ('"""Planted mistake: no square root."""\n# expect: failed\n\n\n'
                   "def rms_norm(x):\n    return x / (x.pow(2).mean(-1, keepdim=True) + 1e-6)\n"),
}
ALTERNATIVES = {
    "rsqrt.py": "x * torch.rsqrt(x.square().mean(-1, keepdim=True) + 1e-6)",
    "power.py": "x / (x * x).mean(dim=-1, keepdim=True).add(1e-6).pow(0.5)",
    "sum.py": "x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) / x.shape[-1] + 1e-6)",
    "einsum.py": "x / torch.sqrt(torch.einsum('...d,...d->...', x, x)[..., None] / x.shape[-1] + 1e-6)",
}


def kata(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([kata_exe(), *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def verify(course_root) -> dict:
    done = kata("verify", "9.11", "--json", cwd=course_root)
    return json.loads(done.stdout)["katas"][0]


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_a_new_kata_is_scaffolded_then_proved_sound_once_written(course_root):
    made = kata("new", "9.11", "rms-norm", "--title", "RMS normalisation", "--requires", "9.2", "--json",
                cwd=course_root)
    assert made.returncode == 0, made.stderr
    written = json.loads(made.stdout)["written"]
    course = load_course(course_root)
    new = course.katas[-1]
    assert (new.id, new.slug, new.title, new.requires) == ("9.11", "rms-norm", "RMS normalisation", ("9.2",))
    assert written[0] == str(course.file) and str(new.exercise) in written
    assert new.exercise.read_text() == derive_stub(new.solution.read_text())
    assert [p.name for p in new.grader_files()] == ["test_rms_norm.py"]
    assert new.mistakes_dir.is_dir() and new.alternatives_dir.is_dir()

    # Again, or with a slug or prerequisite that does not fit: refused, nothing written.
    before = digest(course.file)
    for args, why in ((("9.11", "rms-norm"), "is already in"), (("9.12", "softmax"), "is already in"),
                      (("9.12", "rms", "--requires", "9.99"), "unknown prerequisite '9.99'"),
                      (("nine", "Bad_Slug"), "must look like '9.1'")):
        refused = kata("new", *args, cwd=course_root)
        assert refused.returncode == 2 and why in refused.stderr, (args, refused.stderr)
    assert digest(course.file) == before and not (course_root / "solutions" / "9.12-rms").exists()

    # What verify says is missing: every TODO left, the planted mistakes and alternatives, a reference that
    # passes, and a planted mistake for the diagnosis the shared inputs check can give.
    report = verify(course_root)
    problems = "\n".join(report["problems"])
    assert not report["ok"]
    for where in ("course.toml: kata 9.11: hint 1", "solutions/9.11-rms-norm/solution.py:", "README.md:",
                  "graders/9.11-rms-norm/test_rms_norm.py:"):
        assert f"{where}" in problems and f"{TODO} left" in problems, where
    assert "0 planted mistakes, want at least 3" in problems and "0 alternatives, want at least 4" in problems
    assert "reference solution (seed 0)" in problems and "modifies-input" in problems

    # The author writes the kata; then it is sound.
    new.solution.write_text(SOLUTION)
    new.readme.write_text("# Kata 9.11: RMS normalisation\n\nDivide each vector by its root mean square.\n")
    graders = new.grader_files()[0]
    graders.write_text("\n".join(line for line in graders.read_text().splitlines()
                                 if TODO not in line and "# planted mistake in mistakes/" not in line) + "\n")
    toml = course.file.read_text()
    for tier in ("the concept, in a few sentences.", "the approach, without the code.", "the near-solution."):
        toml = toml.replace(f"{TODO}: {tier}", f"RMS norm hint: {tier}")
    course.file.write_text(toml)
    for name, text in MISTAKES.items():
        (new.mistakes_dir / name).write_text(text)
    for name, body in ALTERNATIVES.items():
        (new.alternatives_dir / name).write_text(f'"""Alternative: {name[:-3]}."""\n\n\n'
                                                 f"def rms_norm(x):\n    return {body}\n")
    assert kata("stubs", "--write", cwd=course_root).returncode == 0
    report = verify(course_root)
    assert report["ok"], report["problems"]
    assert (report["caught"], report["named"], report["alternatives_passing"]) == (3, 3, 4)
    assert (report["diagnoses_defined"], report["covered"], report["uncovered"]) == (["modifies-input"], 1, [])
