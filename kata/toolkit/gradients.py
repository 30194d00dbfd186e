"""Gradient checks that say which entry of the Jacobian is wrong.

`gradcheck` is the test `torch.autograd.gradcheck` runs in its default (slow) mode: the full
Jacobian from autograd, one backward pass per output element, against central finite differences in
float64. It differs in what it reports (the worst entry, with both values and their indices) and
in cost: it only ever backpropagates scalars, which spares `kata check` the half second that
torch's version spends importing its symbolic-shapes machinery on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from kata.toolkit import remote
from kata.toolkit.compare import _index, fail


def _flat_output(fn: Callable, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
    out = fn(*inputs)
    if isinstance(out, tuple):
        out = out[0]
    if not isinstance(out, torch.Tensor):
        fail(f"expected a tensor output, got {remote.type_name(out)}")
    return out.reshape(-1)


def numerical_jacobian(fn: Callable, inputs: Sequence[torch.Tensor], eps: float) -> list[torch.Tensor]:
    """d out / d input for each input, by central differences: a list of (out_numel, in_numel)."""
    jacobians = []
    with torch.no_grad():
        for x in inputs:
            flat = x.view(-1)
            columns = []
            for j in range(flat.numel()):
                saved = flat[j].item()
                flat[j] = saved + eps
                plus = _flat_output(fn, inputs).clone()
                flat[j] = saved - eps
                minus = _flat_output(fn, inputs).clone()
                flat[j] = saved
                columns.append((plus - minus) / (2 * eps))
            jacobians.append(torch.stack(columns, dim=1))
    return jacobians


def analytical_jacobian(fn: Callable, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor] | None:
    """d out / d input for each input from autograd, or None if the output is not connected to them."""
    out = _flat_output(fn, inputs)
    if not out.requires_grad:
        return None
    rows: list[list[torch.Tensor]] = [[] for _ in inputs]
    for i in range(out.numel()):
        for x in inputs:
            x.grad = None
        out[i].backward(retain_graph=True)
        for k, x in enumerate(inputs):
            rows[k].append(torch.zeros(x.numel(), dtype=x.dtype) if x.grad is None else x.grad.reshape(-1).clone())
    return [torch.stack(r) for r in rows]


def gradcheck(fn: Callable, inputs: Sequence[torch.Tensor], *, context: str = "", eps: float = 1e-6,
              atol: float = 1e-5, rtol: float = 1e-3) -> None:
    """Fail unless autograd's Jacobian of `fn` at `inputs` (float64 leaves requiring grad) matches
    central finite differences entrywise within atol + rtol * |numerical|."""
    for x in inputs:
        if x.dtype != torch.float64 or not x.requires_grad:
            raise ValueError("gradcheck inputs are float64 tensors with requires_grad=True")
    suffix = f" for {context}" if context else ""
    analytical = analytical_jacobian(fn, inputs)
    if analytical is None:
        fail("the output does not depend on the inputs through autograd" + suffix +
             " (detach(), .data, .item(), numpy, or a new tensor built from Python numbers cut the graph)")
    numerical = numerical_jacobian(fn, inputs, eps)
    for k, (a, n) in enumerate(zip(analytical, numerical, strict=True)):
        bad = (a - n).abs() > atol + rtol * n.abs()
        if bad.any():
            out_shape = torch.Size([a.shape[0]])
            worst = int(((a - n).abs() * bad).argmax())
            i, j = divmod(worst, a.shape[1])
            fail(f"autograd's gradient differs from finite differences{suffix}: "
                 f"{int(bad.sum())} of {bad.numel()} Jacobian entries differ; worst: d out{_index(i, out_shape)} / "
                 f"d input{k}{_index(j, inputs[k].shape)} is {float(a[i, j]):.6g} by autograd, "
                 f"{float(n[i, j]):.6g} numerically")
