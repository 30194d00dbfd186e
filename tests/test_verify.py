"""`kata verify` over the whole course: the proof that every kata is sound.

For every kata in course.toml: the reference passes every check under three seeds, the stub fails
every check as not implemented, at least three planted mistakes fail with the diagnosis each
declares and no diagnosis it does not list, at least four correct-but-different alternatives pass
with full marks and no diagnosis, and every run stays inside the kata's time budget.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from rich.console import Console

from kata import render, scoring, verify
from kata.course import load_course
from kata.runner import Check, KataResult
from kata.verify import KataReport, Run, queue_order
from tests.conftest import REPO


@pytest.fixture(scope="module")
def course_report() -> dict:
    """`kata verify --json` of the whole course, run once for the tests of this module that read it."""
    result = subprocess.run([sys.executable, "-m", "kata", "verify", "--json"], capture_output=True, text=True,
                            cwd=REPO, timeout=1500)
    report = json.loads(result.stdout)
    report["returncode"] = result.returncode
    return report


@pytest.mark.slow(seconds=250)  # the whole course's verify, its fixture
def test_every_kata_is_sound(course_report):
    report = course_report
    course = load_course(REPO)
    cuda = torch.cuda.is_available()
    devices = ["cpu", "cuda"] if cuda else ["cpu"]
    problems = [f"{k['kata']}: {p}" for k in report["katas"] for p in k["problems"]]
    assert report["ok"] and report["returncode"] == 0, "\n".join(problems)
    assert [k["kata"] for k in report["katas"]] == [k.id for k in course.katas]
    for kata in report["katas"]:
        kinds = [run["kind"] for run in kata["runs"]]
        assert kinds.count("reference") == 3 and kinds.count("stub") == 1 and kinds.count("mistake") >= 3
        assert kinds.count("alternative") >= 4
        assert all(run["ok"] for run in kata["runs"])
        assert kata["false_diagnoses"] == 0
        assert kata["caught"] == kata["named"] == kata["mistakes"] == kinds.count("mistake")
        assert kata["alternatives_passing"] == kata["alternatives"] == kinds.count("alternative")
        # Every passing run graded on every device torch sees, and the report says which: never a silent pass on
        # CUDA. (A run that ends before its checks, a stub that does not import say, names no device.)
        passing = [run for run in kata["runs"] if run["kind"] in ("reference", "alternative")]
        assert all(run["devices"] == devices for run in passing), kata["kata"]
        assert all(run["devices"] in ([], devices) for run in kata["runs"]), kata["kata"]
        assert kata["cuda_verified"] is cuda
        # Without a GPU the CPU ran the half-precision checks written for CUDA (they found two bugs on an H200).
        assert all(run["cuda_checks_on_cpu"] is not cuda for run in passing)
    print(f"kata verify: {report['seconds']} s for {len(report['katas'])} katas")


@pytest.mark.slow
def test_a_model_breaking_planted_mistake_costs_most_of_the_kata_an_edge_one_its_share(course_report):
    """Severity (`kata.scoring`), 9.7: a causal mask that hides the diagonal breaks every decoder built on it (19.35
    of 20 points before the cap: a critical check fails); one made on the CPU whatever device is asked for breaks an
    edge contract and costs only its check's share."""
    runs = {run["name"]: run for kata in course_report["katas"] if kata["kata"] == "9.7" for run in kata["runs"]}
    points = load_course(REPO).find("9.7").points
    assert runs["causal_mask_diagonal_blocked.py"]["points"] == points * scoring.CRITICAL_CAP
    assert points * 0.9 < runs["causal_mask_ignores_device.py"]["points"] < points


# Issue 14: student files that got full marks, lost points, or were told the wrong thing. Each is a planted
# mistake (or an alternative) now, and must get exactly these diagnoses: its own, and nothing else.
ISSUE_14_CASES = [
    ("9.6", "post_norm_dropout_on_sum.py", {"dropout-after-residual"}),  # 5: full marks before
    ("9.7", "causal_mask_ignores_device.py", {"causal-mask-device-ignored"}),  # 5: full marks before
    ("9.1", "sum_along_another_dim.py", {"wrong-normaliser"}),  # 7: was "exp() overflowed"
    ("9.1", "max_along_another_dim.py", {"max-wrong-dim"}),  # 7: no diagnosis before
    ("9.7", "memory_normalised_by_norm_2.py", {"memory-normalised"}),  # 7: was "fed the decoder's own states"
    ("9.6", "functional_dropout_always_on.py", {"dropout-in-eval"}),  # 7: plus a wrong "missing residual"
    ("9.7", "src_mask_ignored.py", {"src-mask-ignored"}),  # 7: plus a wrong "causal mask in cross-attention"
    ("9.4", "split_without_head_axis.py", {"split-heads-not-moved"}),  # 7: promised, absent (its own id: issue 28)
    ("9.4", "scaled_by_d_model.py", {"scaled-by-sqrt-d-model"}),  # 7: promised, absent
    ("9.9", "decode_ignores_tgt_mask.py", {"tgt-mask-ignored"}),  # 7: promised
    ("9.9", "masks_swapped.py", {"masks-swapped"}),  # 7: a bare RuntimeError before
    ("9.10", "log_softmax_wrong_dim.py", {"log-softmax-wrong-dim"}),  # 7: promised, absent
]


@pytest.mark.slow
@pytest.mark.parametrize(("kata", "name", "diagnoses"), ISSUE_14_CASES, ids=[f"{k}-{n}" for k, n, _ in ISSUE_14_CASES])
def test_issue_14_mistakes_are_named_exactly(course_report, kata, name, diagnoses):
    runs = {run["name"]: run for k in course_report["katas"] if k["kata"] == kata for run in k["runs"]
            if run["kind"] == "mistake"}
    assert name in runs, f"no planted mistake {name} in {kata}"
    run = runs[name]
    assert run["outcome"] != "passed" and set(run["diagnoses"]) == diagnoses, run


@pytest.mark.slow
def test_logsumexp_softmax_gets_full_marks(course_report):
    """Issue 14.6: exp(x - logsumexp(x)) is as right as max-subtraction, at 1e4 in float32 too."""
    runs = {run["name"]: run for k in course_report["katas"] if k["kata"] == "9.1" for run in k["runs"]}
    assert runs["logsumexp.py"]["kind"] == "alternative" and runs["logsumexp.py"]["ok"], runs["logsumexp.py"]


def _only_planted(graders, *kept: str) -> None:
    """Leave a copied kata only the planted mistakes `kept` and no alternative: a test of how verify judges the
    runs it is given needs none of the others (the course's own are proved by `course_report`)."""
    for planted in [*(graders / "mistakes").glob("*.py"), *(graders / "alternatives").glob("*.py")]:
        if planted.name not in kept:
            planted.unlink()


def test_verify_catches_a_mistake_that_is_not_diagnosed(course_root):
    """A planted mistake whose declared diagnosis never shows up makes verify fail, naming it."""
    _only_planted(course_root / "graders" / "9.1-softmax")
    mistake = course_root / "graders" / "9.1-softmax" / "mistakes" / "undiagnosed.py"
    mistake.write_text('"""Planted mistake: returns its input."""\n# expect: no-max-subtraction\n\n\n'
                       "def softmax(x, dim=-1):\n    return x.clone()\n")
    result = subprocess.run([sys.executable, "-m", "kata", "verify", "9.1", "--json"], capture_output=True,
                            text=True, timeout=600)
    report = json.loads(result.stdout)
    assert result.returncode == 1 and not report["ok"]
    problems = report["katas"][0]["problems"]
    assert any("mistake undiagnosed.py: expected 'no-max-subtraction'" in p for p in problems), problems


def test_verify_judges_alternatives_and_false_diagnoses(course_root):
    """An alternative that fails, or a diagnosis a mistake does not list, makes verify fail and is counted."""
    graders = course_root / "graders" / "9.1-softmax"
    _only_planted(graders, "sum_along_another_dim.py")
    (graders / "alternatives" / "last_dim_only.py").write_text(
        '"""Alternative (wrong): always the last dim."""\n\n\n'
        "def softmax(x, dim=-1):\n    e = torch.exp(x - x.amax(-1, keepdim=True))\n"
        "    return e / e.sum(-1, keepdim=True)\n")
    wrong_sum = (graders / "mistakes" / "sum_along_another_dim.py").read_text()
    # Declared only as "it fails": the wrong-normaliser diagnosis it gets is then unlisted, a false one...
    (graders / "mistakes" / "unlisted.py").write_text(
        wrong_sum.replace("# expect: wrong-normaliser", "# expect: failed"))
    # ...and listed under "also", a right one.
    (graders / "mistakes" / "listed.py").write_text(
        wrong_sum.replace("# expect: wrong-normaliser", "# expect: failed\n# also: wrong-normaliser"))
    result = subprocess.run([sys.executable, "-m", "kata", "verify", "9.1", "--json"], capture_output=True,
                            text=True, timeout=600)
    report = json.loads(result.stdout)
    kata = report["katas"][0]
    assert result.returncode == 1 and not report["ok"]
    runs = {run["name"]: run for run in kata["runs"]}
    assert not runs["last_dim_only.py"]["ok"] and runs["last_dim_only.py"]["false_diagnoses"] == ["wrong-dim"]
    assert runs["unlisted.py"]["named"] and runs["unlisted.py"]["false_diagnoses"] == ["wrong-normaliser"]
    assert runs["listed.py"]["ok"] and runs["listed.py"]["false_diagnoses"] == []
    assert kata["alternatives"] == kata["alternatives_passing"] + 1
    assert kata["false_diagnoses"] == 2 and kata["caught"] == kata["mistakes"]
    assert any(p.startswith("alternative last_dim_only.py: diagnosed ['wrong-dim']") for p in kata["problems"])
    assert any(p.startswith("mistake unlisted.py: false diagnoses ['wrong-normaliser']") for p in kata["problems"])


def test_verify_reports_diagnoses_without_a_planted_mistake(course_root):
    """Every diagnosis the graders define (at module level, inside an ErrorPattern, in a container) is known to
    verify; one with no planted mistake written for it and named by it is reported as uncovered."""
    graders = course_root / "graders" / "9.1-softmax"
    _only_planted(graders, "sum_along_another_dim.py")
    with (graders / "test_softmax.py").open("a") as grader:
        grader.write('\n\nNEVER_PLANTED = Mistake("never-planted", "a diagnosis no planted mistake is written for")\n'
                     '_PATTERNS = {"any": (ErrorPattern(Mistake("only-in-a-pattern", "held by a pattern in a dict"), '
                     'message="no such error"),)}\n')
    result = subprocess.run([sys.executable, "-m", "kata", "verify", "9.1", "--json"], capture_output=True,
                            text=True, timeout=600)
    kata = json.loads(result.stdout)["katas"][0]
    assert result.returncode == 1 and not kata["ok"]
    assert any(p.startswith("no planted mistake is written for") and "never-planted" in p for p in kata["problems"])
    assert {"never-planted", "only-in-a-pattern", "no-max-subtraction", "wrong-normaliser"} <= set(
        kata["diagnoses_defined"])
    assert {"never-planted", "only-in-a-pattern", "no-max-subtraction"} <= set(kata["uncovered"])
    assert "wrong-normaliser" not in kata["uncovered"]
    assert kata["covered"] == kata["diagnoses"] - len(kata["uncovered"])


def _passing_runs(*devices_and_gpu: tuple[list[str], str | None]) -> list[Run]:
    return [Run("reference", f"solution (seed {seed})", "passed", "passed", 1.0, True, devices=devices, cuda_device=gpu,
                cuda_checks_on_cpu=gpu is None) for seed, (devices, gpu) in enumerate(devices_and_gpu)]


@pytest.mark.parametrize(("runs_by_kata", "said"), [
    ({"9.1": [(["cpu"], None)], "9.2": [(["cpu"], None)]},
     "CUDA not verified (no GPU visible to torch): the passing runs of every kata were graded on cpu only; the "
     "half-precision checks written for CUDA ran on the CPU."),
    ({"9.1": [(["cpu", "cuda"], "NVIDIA H200")], "9.2": [(["cpu", "cuda"], "NVIDIA H200")]},
     "CUDA verified on NVIDIA H200: every reference and alternative passed on cpu and cuda."),
    ({"9.1": [(["cpu", "cuda"], "NVIDIA H200")], "9.2": [(["cpu", "cuda"], "NVIDIA H200"), (["cpu"], None)]},
     "CUDA not verified (not every run of 9.2 was graded on NVIDIA H200): the passing runs of 9.2 were graded on "
     "cpu only."),
])
def test_verify_says_whether_cuda_was_verified(runs_by_kata, said):
    """The last line of `kata verify` says on which GPU the passing runs passed, or that CUDA was not verified."""
    reports = [KataReport(kata, kata, runs=_passing_runs(*runs)) for kata, runs in runs_by_kata.items()]
    console = Console(width=200, highlight=False)
    with console.capture() as captured:
        render.verify_cuda(console, reports)
    assert captured.get().strip() == said
    assert reports[-1].cuda_verified is said.startswith("CUDA verified")


def test_verify_queues_each_kind_of_zygote_together_the_longest_budget_first():
    """One block of katas per kind of zygote (each kind starts `--jobs` times only), the block holding the
    capstone first, and the longest time budget first within a block."""
    course = load_course(REPO)
    order = queue_order(course.katas)
    assert sorted(k.id for k in order) == sorted(k.id for k in course.katas)
    kinds = [k.warm_imports for k in order]
    blocks = [kind for i, kind in enumerate(kinds) if i == 0 or kind != kinds[i - 1]]
    assert len(blocks) == len(set(kinds)) > 1
    assert order[0] == course.capstone and order[0].time_budget_s == max(k.time_budget_s for k in course.katas)
    for kind in set(kinds):
        budgets = [k.time_budget_s for k in order if k.warm_imports == kind]
        assert budgets == sorted(budgets, reverse=True)


def test_only_mistakes_that_expect_a_diagnosis_settle_early(course_root, tmp_path):
    """A planted mistake expecting a diagnosis skips the verdict-only checks once one has failed; one expecting an
    outcome (a timeout, forbidden) runs every check, as do the reference, the stub and the alternatives."""
    course = load_course(course_root)
    kata = course.find("9.1")
    (kata.mistakes_dir / "loops.py").write_text('"""Planted mistake: loops."""\n# expect: timeout\n\n\n'
                                                "def softmax(x, dim=-1):\n    while True:\n        pass\n")
    plan = verify._plan(kata, course, tmp_path / "plan", verify.SEEDS)
    settles = {task.file.name: task.settle_early for task in plan.tasks}
    assert not settles["mistake_loops.py"] and not settles["mistake_softmax_by_another_name.py"]
    assert settles["mistake_no_max_subtraction.py"] and settles["mistake_sum_along_another_dim.py"]
    assert not any(settle for name, settle in settles.items() if not name.startswith("mistake_"))


def test_a_planted_mistake_reported_not_implemented_is_unsound():
    """A planted mistake has no stub left: a check of it that says "not implemented yet" (torch's own
    NotImplementedError taken for the stub's) is a false claim, even when the mistake is named elsewhere."""
    named = {"id": "mask-not-bool", "explanation": ""}
    checks = [Check("a", "a mask check", "failed", diagnoses=[named]), Check("b", "another", "not-implemented")]
    run = verify._judge_mistake(KataResult("9.9", "f.py", "failed", checks=checks), "float_mask.py", "mask-not-bool",
                                set())
    assert run.named and not run.ok and "not implemented yet" in run.detail and "another" in run.detail
    checks[1] = Check("b", "another", "error", diagnoses=[named])
    assert verify._judge_mistake(KataResult("9.9", "f.py", "failed", checks=checks), "float_mask.py",
                                 "mask-not-bool", set()).ok
