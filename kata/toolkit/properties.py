"""Hypothesis, set up for graders: derandomised, no example database, no deadline.

Graders import `given`, `st` and `tensors` from here rather than from hypothesis, so every property
check in the course runs the same reproducible examples for the same seed. `kata verify` grades
the reference with several seeds (`KATA_SEED`); seed 0 is hypothesis's derandomised default.
"""

from __future__ import annotations

import os

import hypothesis.core
import torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.control import current_build_context

_seed = int(os.environ.get("KATA_SEED", "0"))
settings.register_profile(
    "kata",
    derandomize=_seed == 0,
    database=None,
    deadline=None,
    max_examples=int(os.environ.get("KATA_MAX_EXAMPLES", "10")),
    print_blob=False,
    # No "explain" phase: it reports which grader lines ran, and grader source stays hidden.
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("kata")
if _seed:
    hypothesis.core.global_force_seed = _seed


@st.composite
def shapes(draw, min_dims: int = 1, max_dims: int = 4, min_side: int = 1, max_side: int = 6) -> tuple[int, ...]:
    """Tensor shapes, sides of length 1 included (batch 1, sequence length 1)."""
    n = draw(st.integers(min_dims, max_dims))
    return tuple(draw(st.integers(min_side, max_side)) for _ in range(n))


@st.composite
def tensors(draw, shape: tuple[int, ...] | None = None, dtype: torch.dtype = torch.float64,
            scale: float = 1.0, **shape_kwargs) -> torch.Tensor:
    """A normal random tensor: the shape and a generator seed come from hypothesis, the values from torch."""
    shape = shape if shape is not None else draw(shapes(**shape_kwargs))
    seed = draw(st.integers(0, 2**31 - 1))
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=generator, dtype=dtype) * scale


def final_example() -> bool:
    """Whether this run of a property check is the failing example hypothesis reports (the last one, once it
    has shrunk): the moment to look for the classic mistakes it matches, a cost the examples tried while
    shrinking need not pay."""
    return current_build_context().is_final


__all__ = ["final_example", "given", "settings", "shapes", "st", "tensors"]
