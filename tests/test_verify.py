"""`kata verify` over the whole course: the proof that every kata is sound.

For every kata in course.toml: the reference passes every check under three seeds, the stub fails
every check as not implemented, at least three planted mistakes fail with the diagnosis each
declares, and every run stays inside the kata's time budget.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kata.course import load_course
from tests.conftest import REPO


@pytest.mark.slow
def test_every_kata_is_sound():
    course = load_course(REPO)
    result = subprocess.run([sys.executable, "-m", "kata", "verify", "--json"], capture_output=True, text=True,
                            cwd=REPO, timeout=1500)
    report = json.loads(result.stdout)
    problems = [f"{k['kata']}: {p}" for k in report["katas"] for p in k["problems"]]
    assert report["ok"] and result.returncode == 0, "\n".join(problems) or result.stderr[-3000:]
    assert [k["kata"] for k in report["katas"]] == [k.id for k in course.katas]
    for kata in report["katas"]:
        kinds = [run["kind"] for run in kata["runs"]]
        assert kinds.count("reference") == 3 and kinds.count("stub") == 1 and kinds.count("mistake") >= 3
        assert all(run["ok"] for run in kata["runs"])
    print(f"kata verify: {report['seconds']} s for {len(report['katas'])} katas")


def test_verify_catches_a_mistake_that_is_not_diagnosed(course_root):
    """A planted mistake whose declared diagnosis never shows up makes verify fail, naming it."""
    mistake = course_root / "graders" / "9.1-softmax" / "mistakes" / "undiagnosed.py"
    mistake.write_text('"""Planted mistake: returns its input."""\n# expect: no-max-subtraction\n\n\n'
                       "def softmax(x, dim=-1):\n    return x.clone()\n")
    result = subprocess.run([sys.executable, "-m", "kata", "verify", "9.1", "--json"], capture_output=True,
                            text=True, timeout=600)
    report = json.loads(result.stdout)
    assert result.returncode == 1 and not report["ok"]
    problems = report["katas"][0]["problems"]
    assert any("mistake undiagnosed.py: expected 'no-max-subtraction'" in p for p in problems), problems
