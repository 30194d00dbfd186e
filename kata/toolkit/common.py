"""Checks and classic mistakes that every kata shares, written once.

A kata's graders call these with their own modules and inputs, and keep only what is theirs:

    check_inputs_unchanged(lambda: encoder(x, mask), {"x": x, "mask": mask},
                           context="Encoder(2, 8, 2, 16)")
    out = check_output_like(encoder(x), x, "the encoder", context="Encoder(2, 8, 2, 16)")
    check_batch_independence(lambda b: encoder(x[b], mask[b]), batch=4, what="encoded")

Each check declares the mistakes it can name (its `mistakes` attribute): a grader module that holds the
check counts them among the diagnoses its kata defines, as if it had defined them (`kata verify` then
asks for a planted mistake that shows each one firing). A grader that names a shared mistake itself
imports it (`DROPOUT_IN_EVAL` for a dropout check of its own).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import torch

from kata.grading.failure import ErrorPattern, Mistake, fail
from kata.toolkit import remote
from kata.toolkit.compare import assert_close, assert_finite, describe

MODIFIES_INPUT = Mistake("modifies-input",
                         "an input was changed in place (x += ..., x.sub_(), masked_fill_, ...): compute new "
                         "tensors instead")
DROPOUT_IN_EVAL = Mistake("dropout-in-eval",
                          "dropout still acts in eval mode: use nn.Dropout modules (they follow .train() and "
                          ".eval()), or F.dropout(x, p, training=self.training); F.dropout(x, p) alone always "
                          "drops")
ON_DEFAULT_DEVICE = Mistake("tensor-on-default-device",
                            "a tensor your code creates lands on the default device (the CPU), not on the input's: "
                            "on a GPU that is a device mismatch. Create it where the input is (torch.zeros(..., "
                            "device=x.device), torch.zeros_like(x), torch.full_like(x, ...)), or register it as a "
                            "buffer so that .to() moves it")
NORM_ON_RESIDUAL = Mistake("norm-on-residual-path",
                           "with its sub-layers zeroed your pre-norm block returns its norms applied to x, not x "
                           "itself: the norms act on the residual path (post-norm's norm(x + Sublayer(x)), or x = "
                           "norm(x) before the sub-layer), where pre-norm leaves it untouched: x + Sublayer(norm(x))")
BIAS_MISSING = Mistake("bias-missing",
                       "a linear layer was built without its bias (bias=False, or a bare weight matrix): the "
                       "contract's layers are nn.Linear with a bias, x W^T + b, as in the paper")
SUBLAYER_DROPOUT_MISSING = Mistake("sublayer-dropout-missing",
                                   "a sub-layer was built without the block's dropout: the contract builds each "
                                   "attention as MultiHeadAttention(d_model, n_heads, dropout) and ffn = "
                                   "FeedForward(d_model, d_ff, dropout), so that the attention weights and the "
                                   "feed-forward's hidden layer are dropped in training too")
# For a kata's `ERROR_PATTERNS`: autograd's own words when the backward pass cannot run through the student's code.
INPLACE_BREAKS_BACKWARD = ErrorPattern(
    Mistake("in-place-breaks-backward",
            "an in-place operation (x /= ..., h *= mask, x.add_(...)) changed a tensor that autograd had saved for "
            "the backward pass, so backward() cannot run: write it out of place (x = x / ..., h = h * mask)"),
    message=r"modified by an inplace operation")
GRAPH_CUT = ErrorPattern(
    Mistake("graph-cut",
            "backward() found no graph behind your output: it was computed outside autograd (NumPy, Python numbers, "
            "torch.no_grad(), .detach() or .data). Compute it with torch operations on the input tensors themselves"),
    message=r"does not require grad and does not have a grad_fn")
_A_LINE_OF_THE_STUDENTS = r"\S"  # an error pattern's `code`: the error surfaced in the student's file, not in a grader
# For every kata's `ERROR_PATTERNS`: Python operators that torch refuses on the tensors they met, named in general terms
# (fallbacks: a kata's own pattern for the same error, which knows that kata's cause, wins).
BIT_OPERATOR_ON_FLOATS = ErrorPattern(
    Mistake("bit-operator-on-floats",
            "a bit operator (^, &, |, ~, << or >>) met a float, a number or a tensor, and Python and torch define "
            "those for integers and bools only. In Python ^ is exclusive or, not a power (x ** 2 squares); & | ~ "
            "combine bool masks; the arithmetic is + - * /"),
    # torch's words for a float tensor, then Python's for a float number.
    message=r"\"(bitwise_(and|or|xor)|[lr]shift)_\w+\" not implemented for '(Float|Double|Half|BFloat16)'"
            r"|~ \(operator\.invert\) is only implemented on integer and Boolean"
            r"|unsupported operand type\(s\) for (\^|&|\||<<|>>): .*'float'|bad operand type for unary ~: 'float'",
    code=r"[\^&|~]|<<|>>|bitwise|shift", fallback=True)
TENSOR_AS_TRUTH_VALUE = ErrorPattern(
    Mistake("tensor-as-truth-value",
            "a tensor of several values stood where Python needs one True or False (not, and, or, if, while, "
            "assert), and torch cannot tell which you mean. Elementwise, write ~, & and | on bool tensors (or "
            "torch.where); over a whole tensor, ask .all() or .any()"),
    message=r"Boolean value of Tensor with more than one value is ambiguous", code=_A_LINE_OF_THE_STUDENTS,
    fallback=True)
OPERATOR_ERRORS = (BIT_OPERATOR_ON_FLOATS, TENSOR_AS_TRUTH_VALUE)
# For the `ERROR_PATTERNS` of the katas with masks: arithmetic that torch refuses on a bool mask.
MASK_ARITHMETIC = ErrorPattern(
    Mistake("arithmetic-on-bool-mask",
            "an arithmetic operator (-, unary - or +, //, % or **) met a bool mask, and torch defines none of those "
            "for bool tensors, 1 - mask included: invert a mask with ~ (or torch.logical_not), intersect two with & "
            "and join them with |, and keep masks bool"),
    message=r"(Subtraction|Negation), the `-` operator, (with|on) (two bool tensors|a bool tensor)"
            r"|The `\+` operator, on a bool tensor|\"(div_floor|remainder|pow)\w*\" not implemented for 'Bool'",
    code=_A_LINE_OF_THE_STUDENTS, fallback=True)
# For the `ERROR_PATTERNS` of the katas whose checks take gradients through tensors the student divides.
FLOOR_DIVISION_IN_BACKWARD = ErrorPattern(
    Mistake("floor-division-in-backward",
            "// is floor division: it rounds down to whole numbers and has no gradient, so backward() cannot run "
            "through it. Divide tensors with / (// is for integer sizes, such as d_model // n_heads)"),
    message=r"derivative for aten::floor_divide is not implemented", fallback=True)
# For the `ERROR_PATTERNS` of the katas that index dimensions of tensors of several ranks (9.8-9.10).
DIM_OUT_OF_RANGE = ErrorPattern(
    Mistake("dimension-out-of-range",
            "your line names a dimension the tensor does not have: a tensor of n dimensions has dims 0 to n - 1, or "
            "-n to -1 counted from the end. Count from the end (-1 the last, -2 the one before) so that a batch "
            "dimension in front, or none, does not shift the one you mean"),
    message=r"Dimension out of range \(expected to be in range of \[-\d+, \d+\], but got -?\d+\)",
    code=_A_LINE_OF_THE_STUDENTS, fallback=True)
# torch's words for a tensor of another device met by a meta tensor (and, on a GPU, by a CUDA one).
_DEVICE_MISMATCH = re.compile(r"is not on the expected device|Expected all tensors to be on the same device")


def own_value_error(contract: str) -> ErrorPattern:
    """For `ERROR_PATTERNS`: the student's own `raise ValueError` ended a check, every input of which the contract
    allows (a check that wants a ValueError catches it), so the condition guarding that raise is wrong. Known
    only from the line that raised (a raise statement of the student's file), not from torch's ValueErrors."""
    return ErrorPattern(Mistake("value-error-on-valid-input",
                                "your own `raise ValueError` fired for an input the contract allows: the condition "
                                f"guarding that raise is wrong. {contract}"),
                        message=r"^ValueError\b", code=r"^raise\b")


def _names(*mistakes: Mistake):
    """Declare the mistakes a check can name (read by the grading plugin, `_known_diagnoses`)."""
    def declare(check):
        check.mistakes = mistakes
        return check
    return declare


@_names(MODIFIES_INPUT)
def check_inputs_unchanged(call: Callable[[], object], inputs: Mapping[str, torch.Tensor], *, context: str = "",
                           hint: str = "") -> None:
    """Run `call` and check that it left every tensor of `inputs` (name -> tensor) as it was: floating
    tensors compared by value (the largest change shown), masks and tokens exactly. `hint` says how to
    build the kata's new tensors (`~mask`, not `mask.logical_not_()`)."""
    before = {name: t.clone() for name, t in inputs.items()}
    with remote.changed_inputs() as changed:  # tensors cross by value: what the student's code left in them
        call()
    where = f" by {context}" if context else ""
    for name, given in inputs.items():
        now = changed[id(given)][1] if id(given) in changed else given
        if now.is_floating_point():
            assert_close(now, before[name], name=f"{name} after the call", what=f"{name} before it",
                         context=context, mistakes={MODIFIES_INPUT: now})
        elif not torch.equal(now, before[name]):
            changed = int((now != before[name]).sum())
            fail(f"{name} was changed in place{where} ({changed} entries changed)" + (f": {hint}" if hint else ""),
                 MODIFIES_INPUT)


def load_state(module, state: Mapping[str, torch.Tensor],
               on_mismatch: Callable[[RuntimeError], object] | None = None) -> None:
    """`module.load_state_dict(state, strict=True)`, except that a parameter the student's module also holds under
    a second name (an `nn.Sequential` over its own `linear_1` and `linear_2`: `net.0.weight` is `linear_1.weight`)
    is loaded once, through its contract name: a second name for the same tensor is not a parameter of its own.
    Any other mismatch goes to `on_mismatch` (a check's failure, in its kata's words) with torch's RuntimeError, or
    raises that error without one. A stub's NotImplementedError, a RuntimeError too, always propagates as itself."""
    try:
        _load_state(module, state)
    except NotImplementedError:
        raise
    except RuntimeError as exc:
        if on_mismatch is None:
            raise
        on_mismatch(exc)


@_names(BIAS_MISSING)
def bias_missing(held: Mapping[str, tuple[int, ...]], state: Mapping[str, torch.Tensor]) -> tuple[Mistake, ...]:
    """(BIAS_MISSING,) when all that a module lacks of `state` is biases: `held`, its state's shapes by name (a
    grader's load failure has them), holds every other tensor of `state`, with its shape, and nothing else."""
    missing = [name for name in state if name not in held]
    alike = all(held[name] == tuple(t.shape) for name, t in state.items() if name in held)
    if missing and alike and set(held) < set(state) and all(name.endswith("bias") for name in missing):
        return (BIAS_MISSING,)
    return ()


def _load_state(module, state: Mapping[str, torch.Tensor]) -> None:
    try:
        module.load_state_dict(state, strict=True)
    except RuntimeError:
        held = module.state_dict(keep_vars=True)  # by value, each tensor with its identity in the student's process
        extra = [name for name in held if name not in state]
        aliases = all(any(remote.same(held[name], held[own]) for own in state if own in held) for name in extra)
        if not extra or any(name not in held for name in state) or not aliases:
            raise
        module.load_state_dict(state, strict=False)


@_names(SUBLAYER_DROPOUT_MISSING)
def check_sublayers_get_the_dropout(block, calls: Mapping[str, Callable[[object], object]], what: str, *,
                                    context: str) -> None:
    """Each sub-layer of `block` named in `calls`, called by `calls[name](sublayer)` in eval mode and then in train
    mode: the same output twice means nothing random inside, so it was not built with the block's dropout (a block
    built with dropout 0.5, on inputs of dozens of weights and hidden units: a tie by chance never happens)."""
    for name, call in calls.items():
        sublayer = getattr(block, name)
        evaluated, trained = call(sublayer.eval()), call(sublayer.train())
        if not (isinstance(evaluated, torch.Tensor) and isinstance(trained, torch.Tensor)):
            fail(f"{what}.{name} should return a tensor, got {remote.type_name(trained)}")
        if torch.equal(trained, evaluated):
            fail(f"{what}.{name} gives in train mode what it gives in eval mode, on {context}: it does nothing "
                 "random, so it was not built with the block's dropout", SUBLAYER_DROPOUT_MISSING)


@_names(ON_DEFAULT_DEVICE)
def check_follows_the_device(run: Callable[[], object], what: str) -> None:
    """`run()` runs the student's code on inputs (and a module) on torch's meta device, which every machine has:
    tensors with shapes and no storage. Its output must be there too: a tensor made on the default device (no
    `device=`) meets the input as on a GPU, and torch refuses, so a CPU-only grader sees the mistake. What else the
    meta device cannot do (read a value with .item() or `if`, an operation it lacks) says nothing of the student's
    code: the check then leaves the devices to the others. The stub's NotImplementedError is the stub's."""
    try:
        out = run()
    except NotImplementedError as exc:
        if "Meta" not in str(exc):
            raise
        return
    except remote.StudentForbidden:
        raise
    except remote.StudentError as exc:
        if _DEVICE_MISMATCH.search(exc.message):
            fail(f"{what} raised {exc.type_name}: {exc.message}", ON_DEFAULT_DEVICE)
        return
    if isinstance(out, torch.Tensor) and out.device.type != "meta":
        fail(f"{what} returned {describe(out)} for inputs on the meta device: the output should be on the input's "
             "device", ON_DEFAULT_DEVICE)


def check_output_like(out, x: torch.Tensor, what: str, *, context: str = "", finite: bool = False,
                      hint: str = "") -> torch.Tensor:
    """`out` itself, once it is a tensor with `x`'s shape, dtype and device; with `finite`, also free of
    NaN and Inf. `hint` follows the failure ("gamma and beta must be parameters so that .to() moves them")."""
    if not isinstance(out, torch.Tensor):
        fail(f"{what} should return a tensor, got {remote.type_name(out)}" + (f" for {context}" if context else ""))
    if out.dtype != x.dtype or out.device.type != x.device.type or out.shape != x.shape:
        fail(f"{what} returned {describe(out)} for an input {describe(x)}: outputs keep the input's shape, dtype "
             "and device" + (f" ({context})" if context else "") + (f". {hint}" if hint else ""))
    if finite:
        assert_finite(out, context=context)
    return out


def check_gradients_equal(got: Mapping[str, torch.Tensor | None], expected: Mapping[str, torch.Tensor], *,
                          what: str, context: str = "", rtol: float | None = None,
                          mistakes: Mapping[str, Mapping] | None = None,
                          unreached: Mapping[str, tuple[Mistake, ...]] | None = None) -> None:
    """Every gradient the reference has (name -> tensor), the student's of the same name beside it: there
    (else "no gradient reached NAME", naming the `unreached[NAME]` mistakes), and equal to it within
    tolerance (`mistakes[NAME]`: the mistakes' gradients, as `assert_close` takes them). The gradients of
    a wrong forward are wrong too: check the forward first."""
    where = f" for {context}" if context else ""
    for name, theirs in expected.items():
        mine = got.get(name)
        if mine is None:
            fail(f"no gradient reached {name}{where}: it is not used in forward, or the graph was cut (detach(), "
                 ".data, .item() or a new tensor built from numbers)", *(unreached or {}).get(name, ()))
        assert_close(mine, theirs, name=f"gradient of {name}", what=what, context=context, rtol=rtol,
                     mistakes=(mistakes or {}).get(name))


def check_batch_independence(run: Callable[[slice], torch.Tensor], batch: int, *, name: str = "output",
                             what: str = "computed", context: str = "",
                             mistakes: Callable[[int], Mapping] | None = None) -> None:
    """Each element of a batch of `batch` is computed as if alone: `run(slice)` runs on the inputs cut to
    that slice of the batch (every input and mask cut alike), `slice(None)` the whole batch. `mistakes(i)`
    gives the mistakes' outputs for element i, as `assert_close` takes them."""
    together = run(slice(None))
    for i in range(batch):
        alone = run(slice(i, i + 1))
        assert_close(together[i:i + 1], alone, name=f"{name} of batch element {i} in a batch of {batch}",
                     what=f"that element {what} alone", context=context,
                     mistakes=mistakes(i) if mistakes is not None else None)
