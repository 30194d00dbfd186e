"""A kata's pictures: the code that draws them is `kata/viz/katas/<slug>.py` (course.toml's `pictures` says in
a few words what they show), beside the viz code it uses, so that the reference solutions stay pure; what the
pictures of every kata share lives here.

A kata's pictures module defines

    SUBJECT                          whose code the pictures show, for their titles ("Your MultiHeadAttention")
    NEEDS                            the names of the kata's contract that `build` calls
    build(module) -> list[Figure]    from the kata's module (the student's exercise or the reference solution,
                                     loaded by `kata.viz.draw`): the kata's pieces built with fixed seeds, the
                                     numbers computed with `kata.viz.data`, laid out as Figures
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
import torch

from kata.course import Kata
from kata.student_code import CodeError
from kata.viz.figure import Figure, Heatmap

# Small models, so that each picture is drawn in a blink and its labels stay readable.
D_MODEL = 64
N_HEADS = 4
D_FF = 4 * D_MODEL  # the paper's ratio (2048 / 512)

UNTRAINED = ("Untrained: seeded random weights, and each word a fixed random vector without positions (kata 9.8 "
             "adds them), so the two \"the\"s are one vector.")


def numpy_of(t: torch.Tensor) -> np.ndarray:
    return t.detach().to("cpu", torch.float64).numpy()


def attention_map(title: str, weights: torch.Tensor, queries: list[str], keys: list[str], vmax: float,
                  ylabel: str = "query", xlabel: str = "key") -> Heatmap:
    """Attention weights (q_len, k_len) as a heat map: one row per query, its weights over the keys."""
    return Heatmap(title, numpy_of(weights), ylabel, xlabel, rows=queries, cols=keys, vmin=0.0, vmax=vmax,
                   colorbar="attention weight")


@dataclass(frozen=True)
class KataPictures:
    """The pictures of one kata: what of the student's they show, the names they use, how they are built."""

    subject: str  # for titles: "your MultiHeadAttention"
    needs: tuple[str, ...]  # the kata module's names the builder calls
    build: Callable[[ModuleType], list[Figure]]


def pictures_file(kata: Kata) -> Path:
    """Where the code of a kata's pictures is: kata/viz/katas/<slug, with underscores>.py."""
    return Path(__file__).parent / "katas" / f"{kata.module_name}.py"


def load(kata: Kata) -> KataPictures:
    """The pictures of a kata that has some (course.toml's `pictures`), from its module; CodeError when there
    is none."""
    if not pictures_file(kata).is_file():
        raise CodeError(f"course.toml gives kata {kata.id} pictures, but {pictures_file(kata)} is missing")
    module = importlib.import_module(f"kata.viz.katas.{kata.module_name}")
    return KataPictures(module.SUBJECT, tuple(module.NEEDS), module.build)
