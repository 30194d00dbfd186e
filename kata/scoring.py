"""How a kata's points are earned: the one rule `kata check`, `kata grade` and the nbgrader export share.

Each check is worth the kata's points times its weight (`@pytest.mark.weight(n)`, 1 by default) over the
total weight of the checks that were to run. A check marked `@pytest.mark.critical` guards what the kata
builds, on ordinary inputs (its run on the CPU in float32): when it does not pass, a model built on this
code computes the wrong thing, and the kata earns at most `CRITICAL_CAP` of its points, whatever else
passed. Edge contracts (error types, other dtypes, devices, inputs left unchanged, gradients at extremes)
are not critical: each costs its weight's share.

Kept free of torch and pytest: the notebook's kernel imports it.
"""

from __future__ import annotations

CRITICAL_CAP = 0.4  # the share of a kata's points left when a critical check fails: such a bug costs >= 60%


def is_critical_run(device: str | None, dtype: str | None) -> bool:
    """Whether a run of a check marked critical is the ordinary one: on the CPU (or no device) in float32
    (or no dtype). Its other runs (float64, half precision, CUDA) test edge contracts."""
    return device in (None, "cpu") and dtype in (None, "float32")


def earned(points: float, passed_weight: float, total_weight: float, capped: bool) -> float:
    """The kata's score: `points` times the passed weight over the total weight (one product and one
    quotient, so passing every check gives exactly `points`), at most `CRITICAL_CAP` of `points` when
    `capped` (a critical check did not pass)."""
    if not total_weight:
        return 0.0
    score = min(max(points * passed_weight / total_weight, 0.0), points)
    return min(score, points * CRITICAL_CAP) if capped else score


def cap_note(titles: list[str]) -> str:
    """Why a score is capped, in a line: the critical checks that did not pass."""
    return (f"capped at {CRITICAL_CAP:.0%} of the points: a critical check failed ({'; '.join(titles)}), so a "
            "model built on this code computes the wrong thing")
