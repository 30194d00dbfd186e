"""`kata viz 9.8`: the sinusoidal positional-encoding table and the dot product between positions by offset."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import torch

from kata.viz import data
from kata.viz.figure import DIVERGING, Figure, Heatmap, Lines, Series
from kata.viz.pictures import numpy_of

SUBJECT = "sinusoidal_positional_encoding"
NEEDS = ("sinusoidal_positional_encoding",)
PE_LEN, PE_D_MODEL = 200, 128  # the positional-encoding table drawn
PE_POSITIONS, PE_OFFSETS = (50, 100, 150), range(-49, 50)  # PE[p] . PE[p + k]: every p + k inside the table


def _encoding_table(module: ModuleType, max_len: int) -> torch.Tensor:
    """sinusoidal_positional_encoding(max_len, PE_D_MODEL), checked: (max_len, d_model)."""
    table = module.sinusoidal_positional_encoding(max_len, PE_D_MODEL)
    if not isinstance(table, torch.Tensor) or tuple(table.shape) != (max_len, PE_D_MODEL):
        got = tuple(table.shape) if isinstance(table, torch.Tensor) else type(table).__name__
        raise ValueError(f"sinusoidal_positional_encoding({max_len}, {PE_D_MODEL}) should be a tensor of shape "
                         f"{(max_len, PE_D_MODEL)}; got {got}")
    return table


def build(module: ModuleType) -> list[Figure]:
    """Kata 9.8: the sinusoidal table, the dot products between its rows, and their dependence on the offset."""
    pe = _encoding_table(module, PE_LEN)  # (PE_LEN, d_model)
    dots = data.offset_dot_products(pe.double(), PE_POSITIONS, PE_OFFSETS)  # (positions, offsets)
    offsets = np.array(PE_OFFSETS)
    styles = ("-", "--", ":")
    return [Figure(
        "positional-encoding", f"Sinusoidal positional encoding: sinusoidal_positional_encoding({PE_LEN}, "
                               f"{PE_D_MODEL})",
        "Left: one row per position; dimension pair i turns at 1/10000^(2i/d_model) radians per position, so the "
        "first columns flicker and the last barely move. Middle: the dot product of every pair of positions is the "
        f"same along each diagonal. Right: PE[p] . PE[p + k] from three positions p of the same table: the curves "
        f"coincide (only the offset k matters), peak at k = 0 (d_model / 2 = {PE_D_MODEL // 2}) and are symmetric.",
        [Heatmap("the table PE", numpy_of(pe), "position", "dimension (even: sin, odd: cos)", vmin=-1.0, vmax=1.0,
                 cmap=DIVERGING, colorbar="value"),
         Heatmap("PE . PE^T: every pair of positions", numpy_of(pe.double() @ pe.double().T), "position", "position",
                 colorbar="dot product PE[p] . PE[q]"),
         Lines("PE[p] . PE[p + k] by offset", "offset k", "PE[p] . PE[p + k]",
               [Series(f"p = {p}", offsets, numpy_of(dots[i]), styles[i]) for i, p in enumerate(PE_POSITIONS)])])]
