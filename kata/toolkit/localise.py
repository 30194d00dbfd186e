"""Localisation: which part of the student's code is at fault, when no classic mistake matched.

A check that failed with no classic mistake to name can still say where to look, on evidence only:

- swaps: each part of the student's model (a sub-module such as `block.ffn`, or a function of the student's
  module) is replaced by the reference's, one at a time, on the failing input. A part whose swap alone makes
  the output match is at fault ("with the reference FeedForward in place of yours, your block matches").
  Reference parts live in the student's process: built there from `remote.earlier("<slug>")`, with the
  student's part's state loaded into them, so that a swap changes the code and not the weights. When every
  part swapped at once still differs, the parts are not at fault: the student's wiring of them is.

      parts = {FAULT_IN_FFN: lambda: swapped(block, "ffn", reference_part(block.ffn, earlier.FeedForward(8, 16)))}
      assert_close(out, expected, mistakes=..., localise=lambda: localise(lambda: block(x), expected, parts,
                                                                         wiring=FAULT_IN_WIRING))

- the wiring trace: `recorded` hooks the named sub-modules and yields their calls in order; `once_each` takes
  them by name when each was called exactly once (else the trace says nothing), and `first_miswired` finds
  the first sub-layer whose input differs from what the reference's wiring would feed it, computed by the
  grader from the student's own recorded values (so an earlier error does not cascade).

Localisation runs only on a failure no classic mistake matched, and is never a grader's error: an exception
or a student's process gone inside it means no localisation (silence).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from kata.grading.failure import Mistake
from kata.toolkit import remote
from kata.toolkit.compare import is_close

Swap = Callable[[], contextlib.AbstractContextManager]  # enters one part's swap (builds the replacement first)


@contextlib.contextmanager
def swapped(owner, name: str, replacement) -> Iterator[None]:
    """`owner.name` is `replacement` inside the block, the student's own again after it (even on failure).

    `owner` is the student's object (a block, the student's module); `replacement` a module built in the
    student's process (`reference_part`), or a grader's function (lent to the student's code)."""
    original = getattr(owner, name)
    setattr(owner, name, replacement)
    try:
        yield
    finally:
        with contextlib.suppress(remote.StudentGone):  # a process gone has nothing left to restore
            setattr(owner, name, original)


@contextlib.contextmanager
def rewired(module, forward: Callable[..., Any]) -> Iterator[None]:
    """Inside the block, every call of the student's `module` returns `forward(*args, **kwargs)` instead of what
    its own forward gave (a forward hook of the grader's, lent): a swap of its code where its class cannot be
    swapped (a block of the student's own kata, whose reference cannot be built in the student's process)."""
    def hook(_module, args, kwargs, _output):
        return forward(*args, **kwargs)

    handle = module.register_forward_hook(hook, with_kwargs=True)
    try:
        yield
    finally:
        with contextlib.suppress(remote.StudentGone):
            handle.remove()


def reference_part(student_part, replacement):
    """`replacement` (a reference module built in the student's process) holding `student_part`'s state, on its
    device and dtype, in its train/eval mode."""
    state = student_part.state_dict()
    first = next(iter(state.values()), None)
    if isinstance(first, torch.Tensor):
        replacement = replacement.to(device=first.device, dtype=first.dtype)
    replacement.load_state_dict(state, strict=True)
    return replacement.train(bool(student_part.training))


def reference_swap(owner, name: str, slug: str, build: Callable[[Any], Any]) -> Swap:
    """The swap of the student's `owner.name` for the reference part `build(kata.earlier.<slug>)`, built in the
    student's process when the swap is entered, holding the student's part's state."""
    def swap():
        return swapped(owner, name, reference_part(getattr(owner, name), build(remote.earlier(slug))))
    return swap


def grader_twin(student_module, twin: torch.nn.Module) -> Callable[..., Any]:
    """`twin` (a module of the grader's: the kata's own reference, which the student's process cannot import)
    holding the student's module's parameters, on their device and dtype, in eval mode, as a function of the
    grader's (to lend: `rewired`); detached outputs."""
    state = {name: p.detach() for name, p in student_module.named_parameters()}
    first = next(iter(state.values()))
    twin = twin.to(device=first.device, dtype=first.dtype)
    twin.load_state_dict(state, strict=True)
    twin.eval()

    def forward(*args, **kwargs):
        return twin(*args, **kwargs).detach()
    return forward


@contextlib.contextmanager
def each_rewired(modules: Iterable[Any], forward_of: Callable[[Any], Callable[..., Any]]) -> Iterator[None]:
    """Every one of the student's `modules` rewired to `forward_of(module)` inside the block (`rewired`)."""
    with contextlib.ExitStack() as stack:
        for module in modules:
            stack.enter_context(rewired(module, forward_of(module)))
        yield


def mask_as(mask, shape) -> torch.Tensor:
    """A bool mask as the (CPU) tensor of `shape` it stands for, None as nothing blocked: masks written differently
    (broadcast once, expanded) compare alike. ValueError for anything else (a float mask: a trace then says
    nothing about masks)."""
    if mask is None:
        return torch.ones(shape, dtype=torch.bool)
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise ValueError("not a bool mask")
    return mask.cpu().expand(shape)


def fault_in(mistake_id: str, reference: str, name: str, whole: str) -> Mistake:
    """The diagnosis of a part found at fault by its swap: `reference` ("FeedForward (kata 9.5)") in place of the
    student's `name` ("ffn") makes their `whole` ("block") match."""
    return Mistake(mistake_id, f"with the reference {reference} in place of your {name}, holding its weights, your "
                               f"{whole} matches: look at the {name} you build (its class, or what you give it)")


def localise(run: Callable[[], Any], expected: torch.Tensor, parts: Mapping[Mistake, Swap], *,
             rtol: float | None = None, atol: float | None = None,
             wiring: Mistake | Callable[[], Iterable[Mistake]] | None = None) -> tuple[Mistake, ...]:
    """The parts at fault for `run()` differing from `expected`, found by swapping in the reference's.

    `run` computes the student's output on the failing input; `parts` maps each part's diagnosis to a function
    entering its swap (`swapped`). The parts whose swap alone makes the output match are at fault; when none
    does but all at once do, those whose swap back to the student's breaks the match. When all at once still
    differ, the fault is in the student's wiring: `wiring` (a Mistake, or a function giving the diagnoses of a
    trace) is what is said then, if the grader gives one. Nothing is said on doubt: two parts each fixing it
    alone, an output that does not fail again or changes from one run to the next, an exception, a process gone."""
    def matches(swaps: Iterable[Swap]) -> bool:
        with contextlib.ExitStack() as stack:
            for swap in swaps:
                stack.enter_context(swap())
            return is_close(run(), expected, rtol=rtol, atol=atol)

    try:
        with torch.no_grad():
            first = run()
            # Not the failure it was asked about, or a random one (dropout left on, say): a swap would match by chance.
            if is_close(first, expected, rtol=rtol, atol=atol) or not is_close(run(), first, rtol=0.0, atol=0.0):
                return ()
            alone = [mistake for mistake, swap in parts.items() if matches((swap,))]
            if alone:
                return tuple(alone) if len(alone) == 1 else ()
            if not matches(parts.values()):
                if wiring is None or isinstance(wiring, Mistake):
                    return (wiring,) if wiring is not None else ()
                return tuple(wiring())
            return merged([mistake for mistake in parts
                           if not matches([swap for other, swap in parts.items() if other is not mistake])])
    except Exception:  # a swap the student's code refuses, a process gone: no localisation, never a grader error
        return ()


def merged(mistakes: Sequence[Mistake]) -> tuple[Mistake, ...]:
    """One diagnosis per id: variants "<explanation> (<which>)" of one mistake become "<explanation> (<which>,
    <which>)" (parts of one kind at fault together: the norms); other variants of an id give their first."""
    by_id: dict[str, list[Mistake]] = {}
    for mistake in mistakes:
        by_id.setdefault(mistake.id, []).append(mistake)
    found = []
    for group in by_id.values():
        split = [m.explanation.rpartition(" (") for m in group]
        same_base = len({base for base, _, _ in split}) == 1
        if len(group) > 1 and same_base and all(which.endswith(")") for *_, which in split):
            which = ", ".join(detail[:-1] for *_, detail in split)
            found.append(Mistake(group[0].id, f"{split[0][0]} ({which})"))
        else:
            found.append(group[0])
    return tuple(found)


# ------------------------------------------------------------------------------------------------------------
# The wiring trace


@dataclass(frozen=True)
class Call:
    """One call of a hooked sub-module, as it happened in the student's process."""

    name: str
    args: tuple
    kwargs: dict
    output: Any


@contextlib.contextmanager
def recorded(module, names: Sequence[str]) -> Iterator[list[Call]]:
    """The calls of `module`'s sub-modules `names` (dotted paths: "layers.0.ffn") made inside the block, in
    order, recorded by forward hooks (the grader's, lent); the hooks are removed after it."""
    calls: list[Call] = []
    handles = []

    def hook_for(name: str):
        def hook(_module, args, kwargs, output):
            calls.append(Call(name, tuple(args), dict(kwargs), output))
        return hook

    try:
        for name in names:
            handles.append(module.get_submodule(name).register_forward_hook(hook_for(name), with_kwargs=True))
        yield calls
    finally:
        with contextlib.suppress(remote.StudentGone):
            for handle in handles:
                handle.remove()


def once_each(calls: Sequence[Call], names: Iterable[str]) -> dict[str, Call] | None:
    """The call of each of `names`, when each was called exactly once; None when the trace is incomplete (a part
    never called through __call__, or called more than once): then it says nothing."""
    names = list(names)
    found = {name: [c for c in calls if c.name == name] for name in names}
    if any(len(found[name]) != 1 for name in names):
        return None
    return {name: found[name][0] for name in names}


def bound(call: Call, parameters: Sequence[str]) -> list:
    """The call's arguments by parameter name, in `parameters`' order (None for one not given)."""
    given = dict(zip(parameters, call.args, strict=False)) | call.kwargs
    return [given.get(name) for name in parameters]


def first_miswired(feeds: Iterable[tuple[Any, Any, Any]], *, rtol: float | None = None,
                   atol: float | None = None) -> Any:
    """The key of the first (key, what the student fed, what the reference's wiring feeds) that differs, in the
    reference's order; None when every one matches. A tensor is compared within tolerance, anything else
    (None for a mask, say) for equality."""
    for key, actual, wanted in feeds:
        if isinstance(wanted, torch.Tensor):
            if not is_close(actual, wanted, rtol=rtol, atol=atol):
                return key
        elif isinstance(actual, torch.Tensor) or actual != wanted:
            return key
    return None


__all__ = ["Call", "bound", "each_rewired", "fault_in", "first_miswired", "grader_twin", "localise", "mask_as",
           "merged", "once_each", "recorded", "reference_part", "reference_swap", "rewired", "swapped"]
