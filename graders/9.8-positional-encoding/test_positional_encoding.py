"""Graders of kata 9.8: sinusoidal positional encoding and scaled token embeddings.

Hidden from students: they see each check's title and message, never this file.

The truth is the paper's formula evaluated in float64 here. The student's table is built in torch's
default dtype (float32); built in float32 arithmetic (the Annotated Transformer's exp/log recipe,
or 10000 ** (2i / d) / pos), the angle pos * w_i carries a relative rounding error of a few 1e-7, so
an entry at position pos is off by up to about 1e-7 * pos (measured: 4e-4 at pos 5000, d_model 512;
8.5e-8 * pos at worst). Tables are therefore compared with atol = 2e-6 + 4e-7 * pos (four times the
worst measured), in bands of positions, and rtol 0. Every classic mistake is off by O(1).
"""

import math

import pytest
import torch

from kata.toolkit import CheckFailed, Mistake, assert_close, fail, remote
from kata.toolkit.common import (
    DIM_OUT_OF_RANGE,
    FLOOR_DIVISION_IN_BACKWARD,
    OPERATOR_ERRORS,
    check_follows_the_device,
    check_inputs_unchanged,
    own_value_error,
)
from kata.toolkit.compare import describe, is_close
from kata.toolkit.properties import given, st

# Small tensors: torch's intra-op threads cost more CPU in synchronisation than they save. One thread, for
# this grading process only.
torch.set_num_threads(1)

# ---- classic mistakes -------------------------------------------------------------------------------

SWAPPED = Mistake("sin-cos-swapped",
                  "sin and cos are swapped: the EVEN dimensions 2i hold sin(pos * w_i) and the ODD dimensions "
                  "2i + 1 hold cos(pos * w_i) (pe[:, 0::2] = sin, pe[:, 1::2] = cos)")
EXPONENT_I = Mistake("exponent-i-not-2i",
                     "the exponent uses the pair index i instead of 2i: the frequency of pair i is "
                     "1 / 10000^(2i / d_model), i.e. torch.arange(0, d_model, 2) / d_model in the exponent, "
                     "not torch.arange(d_model // 2) / d_model")
EXPONENT_PER_DIM = Mistake("exponent-per-dimension",
                           "each dimension j got its own exponent j / d_model, so the cos of pair i uses "
                           "(2i + 1) / d_model: both dimensions of a pair share ONE frequency, "
                           "1 / 10000^(2i / d_model), with 2i the even dimension of the pair")
EXPONENT_SIGN = Mistake("exponent-sign",
                        "the frequencies grow instead of shrinking: the angle is pos / 10000^(2i / d_model), so "
                        "with exp/log it is pos * exp(-(2i) * ln(10000) / d_model); the minus sign is missing")
FLOOR_DIVISION = Mistake("exponent-floor-division",
                          "the exponent was computed with floor division (//), which rounds 2i / d_model (or "
                          "ln(10000) / d_model) down to a whole number: divide with /, so that the frequencies "
                          "1 / 10000^(2i / d_model) fall smoothly from 1 to 1/10000")
OTHER_BASE = Mistake("wrong-base",
                     "the frequencies use another base than the paper's 10000: w_i = 1 / 10000^(2i / d_model)")
CONCATENATED = Mistake("sin-cos-concatenated",
                       "the sines fill the first half of the dimensions and the cosines the second half: the paper "
                       "INTERLEAVES them, sin in dimension 2i and cos in dimension 2i + 1 (pe[:, 0::2] and "
                       "pe[:, 1::2])")
STARTS_AT_ONE = Mistake("positions-start-at-1",
                        "positions are counted from 1: row 0 is position 0, so PE[0] = (0, 1, 0, 1, ...); use "
                        "torch.arange(max_len)")
NO_POSITIONS = Mistake("positions-not-added",
                       "the output is the input unchanged: add the encoding, x + pe[:seq_len]")
SCALE_IN_PE = Mistake("scale-in-positional-encoding",
                      "the sqrt(d_model) scale was applied inside PositionalEncoding: it belongs to the token "
                      "embedding (TokenEmbedding multiplies by sqrt(d_model)); PositionalEncoding only adds "
                      "pe[:seq_len] (then dropout)")
ALONG_BATCH = Mistake("positions-along-batch",
                      "the positions were taken along the batch dimension (pe[:x.size(0)], as in code written for "
                      "(seq, batch, d_model) inputs): inputs here are batch first, (batch, seq, d_model), so "
                      "position t is x[:, t] and the rows to add are pe[:x.size(1)]")
PE_BATCH_DIM = Mistake("pe-has-batch-dimension",
                       "the buffer pe has a leading batch dimension (the Annotated Transformer's pe.unsqueeze(0)): "
                       "the contract's buffer is the (max_len, d_model) table itself; pe[:seq_len] broadcasts over "
                       "the batch as it is")
NOT_SCALED = Mistake("embedding-not-scaled",
                     "the embedding was not multiplied by sqrt(d_model): return embedding(tokens) * "
                     "math.sqrt(d_model)")
SCALED_BY_D = Mistake("embedding-scaled-by-d-model",
                      "the embedding was multiplied by d_model: the paper's factor is its square root, "
                      "math.sqrt(d_model)")
SCALE_ROUNDED = Mistake("embedding-scale-rounded",
                        "the scale sqrt(d_model) was rounded to a whole number (int(), //, round() or "
                        "math.isqrt): multiply by math.sqrt(d_model), a float (sqrt(12) is 3.46, not 3)")
PADDING_IDX = Mistake("padding-idx-set",
                      "the embedding was built with a padding_idx: that token's row then gets no gradient and is "
                      "never learned. The contract's embedding is plain nn.Embedding(vocab_size, d_model): "
                      "padding is the mask's business")
DIVIDED = Mistake("embedding-divided-by-sqrt-d-model",
                  "the embedding was divided by sqrt(d_model): multiply by it (section 3.4)")
PE_PARAMETER = Mistake("pe-is-parameter",
                       "pe is an nn.Parameter: the optimiser would train (and weight-decay) it, and it counts as a "
                       "parameter. Register the fixed table with self.register_buffer('pe', table)")
PE_NOT_BUFFER = Mistake("pe-not-a-buffer",
                        "pe is a plain tensor attribute: .to(device) does not move it and state_dict() does not "
                        "save it. Register it with self.register_buffer('pe', table)")
PE_NOT_PERSISTENT = Mistake("pe-not-in-state-dict",
                            "pe is registered with persistent=False, so state_dict() leaves it out: use "
                            "self.register_buffer('pe', table) (persistent by default)")
NO_LENGTH_CHECK = Mistake("no-length-check",
                          "a sequence longer than max_len must raise ValueError (pe has only max_len rows): "
                          "check x.size(1) against max_len before slicing")
NO_ODD_CHECK = Mistake("no-odd-d-model-check",
                       "an odd d_model must raise ValueError: the dimensions come in (sin, cos) pairs. Check "
                       "d_model % 2 before building the table")
DROPOUT_RATE_IGNORED = Mistake("dropout-rate-ignored",
                               "about 10% of the entries were dropped, the default rate, whatever dropout was given: "
                               "build nn.Dropout(dropout) with the rate PositionalEncoding(d_model, max_len, dropout) "
                               "receives")
NO_DROPOUT = Mistake("dropout-missing",
                     "no dropout in training mode: apply nn.Dropout(dropout) to the sum x + pe[:seq_len]")
DROPOUT_BEFORE_ADD = Mistake("dropout-before-adding-positions",
                             "dropout was applied to x before adding the encoding: the paper applies it to the "
                             "SUM of the embeddings and the positional encodings (section 5.4)")

# Where the fault is, when no classic mistake matched: read from the student's own table (the sin columns
# against the cos columns; the frequency of each pair, read off row 1) or from the embedding's output.
FAULT_IN_SIN = Mistake("fault-in-sin-columns",
                       "your cos columns (odd dimensions 2i + 1) are right and your sin columns are not: look at "
                       "PE[pos, 2i] = sin(pos / 10000^(2i / d_model))")
FAULT_IN_COS = Mistake("fault-in-cos-columns",
                       "your sin columns (even dimensions 2i) are right and your cos columns are not: look at "
                       "PE[pos, 2i + 1] = cos(pos / 10000^(2i / d_model))")
FAULT_IN_FREQUENCIES = Mistake("fault-in-frequencies",
                               "your table is sin(pos * w_i), cos(pos * w_i) with the positions right, but some "
                               "frequency w_i (read off your row 1) is not 1 / 10000^(2i / d_model): look at how "
                               "you compute the frequencies")
FAULT_IN_FORWARD = Mistake("fault-in-forward",
                           "your buffer pe holds the right table, but forward (in eval mode) does not return "
                           "x + pe[:seq_len]: the fault is in how forward combines x with the table's first seq_len "
                           "rows")
FAULT_IN_EMBEDDING_SCALE = Mistake("fault-in-embedding-scale",
                                   "your output is the looked-up embedding times a constant other than "
                                   "sqrt(d_model): the lookup is right, the scale is not")

ERROR_PATTERNS = [
    own_value_error("The contract's ValueErrors: an odd d_model, and a sequence longer than max_len (one of exactly "
                    "max_len positions fits)"),
    *OPERATOR_ERRORS,
    DIM_OUT_OF_RANGE,
    FLOOR_DIVISION_IN_BACKWARD,
]

# ---- the formula, and the tables the classic mistakes build (float64) --------------------------------

def angles(max_len, d_model, *, exponent="2i", start=0, base=10000.0):
    """pos * w_i, (max_len, d_model // 2)."""
    pos = torch.arange(start, start + max_len, dtype=torch.float64)[:, None]
    i = torch.arange(d_model // 2, dtype=torch.float64)
    power = {"2i": 2 * i, "i": i}[exponent] / d_model
    return pos / base ** power


# The two floor divisions students write: 2i // d_model in the power (0 for every pair: every frequency is 1),
# and the Annotated Transformer's -(ln(10000) // d_model) in exp (a whole number: 0 once d_model > 9, where the
# two tables are the same and FLOOR_DIVISION itself speaks for both).
FLOORED = (Mistake(FLOOR_DIVISION.id, FLOOR_DIVISION.explanation + " (yours: 2i // d_model, so every frequency is 1)"),
           Mistake(FLOOR_DIVISION.id, FLOOR_DIVISION.explanation + " (yours: ln(10000) // d_model in the exponent)"))


def table(max_len, d_model, mistake=None, *, base=10000.0):
    """The paper's table (mistake None, base 10000) or the one a classic mistake builds, float64."""
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    a = angles(max_len, d_model, exponent="i" if mistake is EXPONENT_I else "2i",
               start=1 if mistake is STARTS_AT_ONE else 0, base=base)
    if mistake in (FLOOR_DIVISION, *FLOORED):
        pos = torch.arange(max_len, dtype=torch.float64)[:, None]
        two_i = 2 * torch.arange(d_model // 2, dtype=torch.float64)
        a = pos * (torch.exp(-two_i * (math.log(10000.0) // d_model)) if mistake is FLOORED[1]
                   else torch.ones_like(two_i))
    if mistake is EXPONENT_SIGN:  # pos * 10000^(2i / d_model)
        a = torch.arange(max_len, dtype=torch.float64)[:, None] * 10000.0 ** (
            2 * torch.arange(d_model // 2, dtype=torch.float64) / d_model)
    if mistake is EXPONENT_PER_DIM:
        pos = torch.arange(max_len, dtype=torch.float64)[:, None]
        every = pos / 10000.0 ** (torch.arange(d_model, dtype=torch.float64) / d_model)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(every[:, 0::2]), torch.cos(every[:, 1::2])
        return pe
    if mistake is CONCATENATED:
        return torch.cat([torch.sin(a), torch.cos(a)], dim=1)
    first, second = (torch.cos, torch.sin) if mistake is SWAPPED else (torch.sin, torch.cos)
    pe[:, 0::2], pe[:, 1::2] = first(a), second(a)
    return pe


TABLE_MISTAKES = (SWAPPED, EXPONENT_I, EXPONENT_PER_DIM, EXPONENT_SIGN, CONCATENATED, STARTS_AT_ONE)


def classic_tables(d_model) -> tuple[Mistake, ...]:
    """The classic mistakes of the table that differ from each other at this d_model."""
    return (*TABLE_MISTAKES, *(FLOORED if math.log(10000.0) // d_model else (FLOOR_DIVISION,)))


def pe_atol(max_pos: int) -> float:
    """Tolerance for entries at positions <= max_pos of a table built in float32 (see the module doc)."""
    return 2e-6 + 4e-7 * max_pos


def other_base(pe: torch.Tensor) -> tuple[Mistake, float] | None:
    """(OTHER_BASE saying which, b) for a table whose PE[1, d_model - 2] = sin(b^-(d - 2)/d) reads as a base b
    other than 10000; None where no base fits that entry (fewer than two pairs, a frequency that is no base's),
    or where that base's table is another classic mistake's, which names it: 100 is 10000 with i for 2i, 1 and
    e^(d_model * (ln(10000) // d_model)) are the floor divisions'."""
    d_model = pe.size(1)
    if pe.size(0) < 2 or d_model < 4:
        return None
    w = math.asin(max(-1.0, min(1.0, float(pe[1, d_model - 2]))))
    if not 0 < w < 1:
        return None
    base = w ** (-d_model / (d_model - 2))
    named = (10000.0, 100.0, 1.0, math.exp(d_model * (math.log(10000.0) // d_model)))
    if any(math.isclose(base, other, rel_tol=1e-3) for other in named):
        return None
    return Mistake(OTHER_BASE.id, f"{OTHER_BASE.explanation} (yours behaves like base {base:.6g})"), base


def student_base(student) -> tuple[Mistake, float] | None:
    """other_base of the student's tables, where d_model = 8 and d_model = 16 read as the same base: a base is
    the same for every d_model, where an exponent's slip (2i / (d_model - 2) for 2i / d_model) reads as a base
    that changes with d_model."""
    try:
        fitted = [other_base(student_table(student, 101, d_model)) for d_model in (8, 16)]
    except remote.StudentForbidden:
        raise
    except (CheckFailed, remote.StudentError):  # a table that cannot be read reads as no base
        return None
    if None in fitted or not math.isclose(fitted[0][1], fitted[1][1], rel_tol=1e-3):
        return None
    return fitted[0]


def table_mistakes(max_len, d_model, rows=slice(None), base: tuple[Mistake, float] | None = None) -> dict:
    """The tables of the classic mistakes, and, given the student's `base` (`student_base`), the paper's with
    that base (a model checked on every entry: it names only a table that is the formula's but for its base)."""
    found = {m: (lambda m=m: table(max_len, d_model, m)[rows]) for m in classic_tables(d_model)}
    if base is not None:
        found[base[0]] = lambda: table(max_len, d_model, base=base[1])[rows]
    return found


def table_at_fault(mine: torch.Tensor) -> tuple[Mistake, ...]:
    """The part of the student's whole (max_len, d_model) table `mine` (float64) at fault: one kind of column
    right and the other not, or every pair a sinusoid of the positions at a frequency read off its row 1 (each
    checked on every row, so at least 3) with one such frequency wrong. Nothing otherwise."""
    max_len, d_model = mine.shape
    if max_len < 3 or d_model < 2 or d_model % 2:
        return ()
    truth, atol = table(max_len, d_model), pe_atol(max_len)
    sin_right = is_close(mine[:, 0::2], truth[:, 0::2], rtol=0, atol=atol)
    cos_right = is_close(mine[:, 1::2], truth[:, 1::2], rtol=0, atol=atol)
    if sin_right != cos_right:
        return (FAULT_IN_COS if sin_right else FAULT_IN_SIN,)
    w = torch.atan2(mine[1, 0::2], mine[1, 1::2])  # (d_model/2,): each pair's frequency, modulo 2 pi
    angle = torch.arange(max_len, dtype=torch.float64)[:, None] * w
    if not (is_close(mine[:, 0::2], torch.sin(angle), rtol=0, atol=atol)
            and is_close(mine[:, 1::2], torch.cos(angle), rtol=0, atol=atol)):
        return ()
    paper = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    wrong = (torch.remainder(w - paper + math.pi, 2 * math.pi) - math.pi).abs() > 1e-5
    if not bool(wrong.any()):
        return ()
    i = int(wrong.nonzero()[0])
    return (Mistake(FAULT_IN_FREQUENCIES.id, f"{FAULT_IN_FREQUENCIES.explanation} (pair {i}, d_model={d_model}: "
                    f"yours {float(w[i]):.6g} modulo 2 pi, the paper's {float(paper[i]):.6g})"),)


def embedding_at_fault(out, looked_up: torch.Tensor, d_model: int) -> tuple[Mistake, ...]:
    """FAULT_IN_EMBEDDING_SCALE where `out` is the lookup times one constant (least squares), other than
    sqrt(d_model)."""
    if not isinstance(out, torch.Tensor) or out.shape != looked_up.shape:
        return ()
    a, b = out.detach().double().cpu(), looked_up.detach().double().cpu()
    c = float((a * b).sum() / (b * b).sum())
    if not is_close(a, c * b, rtol=1e-4, atol=1e-6) or math.isclose(c, math.sqrt(d_model), rel_tol=1e-4):
        return ()
    return (Mistake(FAULT_IN_EMBEDDING_SCALE.id, f"{FAULT_IN_EMBEDDING_SCALE.explanation} (yours multiplies by "
                    f"{c:.6g}, sqrt({d_model}) = {math.sqrt(d_model):.6g})"),)


# ---- calling the student's code ---------------------------------------------------------------------

def student_table(student, max_len, d_model) -> torch.Tensor:
    """The student's table, checked for type and shape, as float64."""
    pe = student.sinusoidal_positional_encoding(max_len, d_model)
    context = f"sinusoidal_positional_encoding({max_len}, {d_model})"
    if not isinstance(pe, torch.Tensor):
        fail(f"{context} should return a tensor, got {type(pe).__name__}")
    if tuple(pe.shape) != (max_len, d_model):
        fail(f"{context} should return a ({max_len}, {d_model}) table (max_len, d_model), got {describe(pe)}")
    if not pe.is_floating_point():
        fail(f"{context} should return floating-point values, got {pe.dtype}")
    return pe.detach().to("cpu", torch.float64)


def forward_at_fault(out, x: torch.Tensor, module, max_len: int) -> tuple[Mistake, ...]:
    """The localisation of a PositionalEncoding's wrong output `out` for `x`: its own buffer, moved with the module
    as a buffer is, holding the right table puts the fault in forward. Nothing when the output's shape, dtype or
    device is wrong, or the table is (the table's own checks say what is wrong with it)."""
    pe = buffer_table(module, max_len, x.size(-1)).detach()
    if not isinstance(out, torch.Tensor) or (out.shape, out.dtype, out.device) != (x.shape, x.dtype, x.device) \
            or (pe.dtype, pe.device) != (x.dtype, x.device):
        return ()
    # A half-precision buffer (the module moved .to(dtype)) holds each entry to within its rounding.
    atol = max(pe_atol(max_len), torch.finfo(pe.dtype).eps)
    return (FAULT_IN_FORWARD,) if is_close(pe.double().cpu(), table(max_len, x.size(-1)), rtol=0, atol=atol) else ()


def buffer_table(module, max_len, d_model) -> torch.Tensor:
    """The module's `pe` buffer, checked to be (max_len, d_model) as the contract says."""
    pe = getattr(module, "pe", None)
    if not isinstance(pe, torch.Tensor):
        fail("PositionalEncoding should hold its table in a buffer named `pe`: "
             "self.register_buffer('pe', sinusoidal_positional_encoding(max_len, d_model))")
    if tuple(pe.shape) != (max_len, d_model):
        batched = tuple(pe.shape) == (1, max_len, d_model)
        fail(f"the buffer pe should be (max_len, d_model) = ({max_len}, {d_model}), got {describe(pe)}",
             *((PE_BATCH_DIM,) if batched else ()))
    return pe


def expect_value_error(call, what: str, mistake: Mistake) -> None:
    """`call()` must raise ValueError; anything else is a failure naming `mistake`."""
    try:
        result = call()
    except NotImplementedError:
        raise
    except ValueError:
        return
    except Exception as exc:  # the student's code raised something else: say what and what was wanted
        fail(f"{what} should raise ValueError, but raised {type(exc).__name__}: {exc}", mistake)
    fail(f"{what} should raise ValueError, but returned {describe(result)}", mistake)


def positional_mistakes(x, max_len, d_model, pe=None) -> dict:
    """What PositionalEncoding's classic mistakes output for x (batch, seq, d_model), in eval.

    pe: the (max_len, d_model) table the mistakes add; the paper's when None, and then the classic
    mistakes of the table are candidates too.
    """
    batch, seq, _ = x.shape
    truth = pe is None
    pe = (table(max_len, d_model) if truth else pe.detach()).to(x.device, x.dtype)
    rows = pe[:seq]
    root = math.sqrt(d_model)
    found = {
        NO_POSITIONS: x,
        SCALE_IN_PE: lambda: x * root + rows,
        Mistake(SCALE_IN_PE.id, SCALE_IN_PE.explanation + " (yours scales the sum)"): lambda: (x + rows) * root,
        Mistake(SCALE_IN_PE.id, SCALE_IN_PE.explanation + " (yours scales the encoding)"): lambda: x + rows * root,
    }
    if batch <= max_len and batch != seq:
        found[ALONG_BATCH] = lambda: x + pe[:batch, None, :]
    if truth and seq > 1:  # one position is row 0 (or row 1 for some mistake): too few to tell a table's mistake
        for mistake in classic_tables(d_model):
            found[mistake] = lambda m=mistake: x + table(max_len, d_model, m)[:seq].to(x.device, x.dtype)
    return found


def embedding_mistakes(looked_up, d_model) -> dict:
    root = math.sqrt(d_model)
    found = {NOT_SCALED: looked_up, SCALED_BY_D: lambda: looked_up * d_model, DIVIDED: lambda: looked_up / root}
    for whole in sorted({math.floor(root), round(root)} - {root}):  # a whole-number scale, where sqrt is none
        found[Mistake(SCALE_ROUNDED.id, f"{SCALE_ROUNDED.explanation}: yours multiplies by {whole}")] = (
            lambda whole=whole: looked_up * whole)
    return found


# ---- sinusoidal_positional_encoding -----------------------------------------------------------------

ENTRIES = [  # (d_model, pos, dim): pairs (2i, 2i + 1) at several frequencies, positions > 0
    (8, 1, 0), (8, 1, 1), (8, 2, 2), (8, 2, 3), (8, 10, 4), (8, 10, 5), (8, 100, 6), (8, 100, 7),
    (512, 3, 2), (512, 3, 3), (512, 7, 256), (512, 7, 257), (512, 7, 511),
]


def formula_text(pos, dim, d_model) -> str:
    i2 = dim - dim % 2
    return f"{'sin' if dim % 2 == 0 else 'cos'}({pos} / 10000^({i2}/{d_model}))"


@pytest.mark.critical
def test_entries_follow_the_formula(student):
    """Entries equal the paper's formula at chosen positions and dimensions"""
    tables = {d: student_table(student, 101, d) for d in sorted({d for d, _, _ in ENTRIES})}
    truth = {d: table(101, d) for d in tables}
    row0 = tables[8][0]
    expected0 = truth[8][0]
    if not is_close(row0, expected0, rtol=0, atol=1e-6):
        fail(f"PE[0] (d_model=8) should be (sin 0, cos 0, ...) = (0, 1, 0, 1, 0, 1, 0, 1), got "
             f"({', '.join(f'{v:.4g}' for v in row0.tolist())})",
             *([m for m in TABLE_MISTAKES if is_close(row0, table(101, 8, m)[0], rtol=0, atol=1e-6)]
               or table_at_fault(tables[8])))
    for d_model, pos, dim in ENTRIES:
        got, want = float(tables[d_model][pos, dim]), float(truth[d_model][pos, dim])
        if abs(got - want) > pe_atol(pos):
            # Which classic mistake reproduces every chosen entry? (A base read from d_model=8's table holds
            # for every d_model.)
            # (d_model 8 tells the two floor divisions apart.)
            models = {m: (lambda d, m=m: table(101, d, m)) for m in (*TABLE_MISTAKES, *FLOORED)}
            if (fitted := student_base(student)) is not None:
                models[fitted[0]] = lambda d: table(101, d, base=fitted[1])
            looks_like = [m for m, model in models.items()
                          if all(abs(float(tables[d][p, j]) - float(model(d)[p, j])) <= 1e-5 for d, p, j in ENTRIES)]
            fail(f"PE[{pos}, {dim}] with d_model={d_model} is {got:.6f}; the paper's formula gives "
                 f"{formula_text(pos, dim, d_model)} = {want:.6f}", *(looks_like or table_at_fault(tables[d_model])))


TABLE_CASES = [  # (max_len, d_model)
    (1, 2), (7, 4), (50, 16), (33, 6), (5000, 512),
]


def test_table_matches_formula(student):
    """The whole table equals the formula, for several sizes (the paper's 5000 x 512 included)"""
    base = None
    for max_len, d_model in TABLE_CASES:
        pe = student.sinusoidal_positional_encoding(max_len, d_model)
        if isinstance(pe, torch.Tensor) and pe.dtype != torch.get_default_dtype():
            fail(f"sinusoidal_positional_encoding({max_len}, {d_model}) returned {pe.dtype}: return torch's "
                 f"default dtype ({torch.get_default_dtype()}), as torch.zeros(max_len, d_model) does; a module "
                 "converts it with .to() when it needs another")
        mine = student_table(student, max_len, d_model)
        truth = table(max_len, d_model)
        if base is None and not is_close(mine, truth, rtol=0, atol=pe_atol(max_len)):
            base = student_base(student)
        start = 0
        for end in (64, 512, max_len):  # bands of positions, each with its own float32 tolerance
            end = min(end, max_len)
            if end <= start:
                continue
            rows = slice(start, end)
            assert_close(mine[rows], truth[rows], name=f"the table at positions {start}..{end - 1}",
                         what="the paper's formula", check_dtype=False, rtol=0, atol=pe_atol(end),
                         context=f"sinusoidal_positional_encoding({max_len}, {d_model})",
                         mistakes=table_mistakes(max_len, d_model, rows, base),
                         localise=lambda mine=mine: table_at_fault(mine))
            start = end


def test_odd_d_model_raises(student):
    """An odd d_model raises ValueError"""
    for d_model in (7, 1):
        expect_value_error(lambda d=d_model: student.sinusoidal_positional_encoding(10, d),
                           f"sinusoidal_positional_encoding(10, {d_model})", NO_ODD_CHECK)


def test_rows_differ(student):
    """Every position gets its own encoding: all rows of the table differ"""
    for max_len, d_model in ((1000, 64), (200, 8)):
        pe = student_table(student, max_len, d_model)
        gram = pe @ pe.T  # (max_len, max_len)
        sq = gram.diagonal()
        dist2 = (sq[:, None] + sq[None, :] - 2 * gram).clamp_min(0)
        dist2.fill_diagonal_(float("inf"))
        flat = int(dist2.argmin())
        a, b = divmod(flat, max_len)
        distance = float(dist2[a, b].sqrt())
        if not distance > 0.1:  # the formula's rows are at least 0.64 apart for these sizes
            fail(f"rows {min(a, b)} and {max(a, b)} of sinusoidal_positional_encoding({max_len}, {d_model}) are "
                 f"{'equal' if distance == 0 else f'nearly equal (distance {distance:.3g})'}: every position "
                 "must get a distinct encoding; does the angle pos * w_i really use each row's position?")


def rotate(pe, k, frequency):
    """Each pair (2i, 2i + 1) of every row rotated by the angle k * frequency[i]."""
    a = k * frequency
    s, c = pe[:, 0::2], pe[:, 1::2]
    out = torch.empty_like(pe)
    out[:, 0::2] = s * torch.cos(a) + c * torch.sin(a)
    out[:, 1::2] = c * torch.cos(a) - s * torch.sin(a)
    return out


@given(half=st.integers(1, 16), k=st.integers(1, 20), extra=st.integers(1, 40))
def test_offset_is_a_rotation(student, half, k, extra):
    """Offset property: PE(pos + k) is PE(pos) with each (sin, cos) pair rotated by k * w_i"""
    d_model, max_len = 2 * half, k + extra
    pe = student_table(student, max_len, d_model)
    i = torch.arange(half, dtype=torch.float64)
    w = 10000.0 ** (-2 * i / d_model)
    expected = rotate(pe[:-k], k, w)  # (max_len - k, d_model)
    assert_close(pe[k:], expected, name="PE(pos + k)",
                 what="PE(pos) rotated pair by pair (angle k * w_i, w_i = 10000^(-2i/d_model))",
                 context=f"d_model={d_model}, k={k}, positions 0..{max_len - 1}", rtol=0,
                 atol=3 * pe_atol(max_len),  # two table entries and a rotation: about three entries' error
                 mistakes={SWAPPED: lambda: rotate(pe[:-k], -k, w),
                           EXPONENT_I: lambda: rotate(pe[:-k], k, 10000.0 ** (-i / d_model)),
                           EXPONENT_SIGN: lambda: rotate(pe[:-k], k, 10000.0 ** (2 * i / d_model))})


# ---- PositionalEncoding -----------------------------------------------------------------------------

def test_pe_is_a_buffer(student):
    """pe is a buffer (not a parameter) holding the table, and it is in the state_dict"""
    module = student.PositionalEncoding(16, max_len=50, dropout=0.0)
    parameters = dict(module.named_parameters())
    if "pe" in parameters:
        fail("pe is registered as a parameter (nn.Parameter)", PE_PARAMETER)
    if parameters:
        fail(f"PositionalEncoding should have no parameters (nothing in it is learned), it has: "
             f"{', '.join(parameters)}", PE_PARAMETER)
    if "pe" not in dict(module.named_buffers()):
        if isinstance(getattr(module, "pe", None), torch.Tensor):
            fail("pe is a plain attribute, not a registered buffer", PE_NOT_BUFFER)
        fail("PositionalEncoding has no buffer named `pe`: self.register_buffer('pe', table)", PE_NOT_BUFFER)
    if "pe" not in module.state_dict():
        fail("pe is a buffer but not in state_dict()", PE_NOT_PERSISTENT)
    pe = buffer_table(module, 50, 16)
    mine = pe.detach().to("cpu", torch.float64)
    assert_close(mine, table(50, 16), name="the buffer pe",
                 what="sinusoidal_positional_encoding(50, 16)", check_dtype=False, rtol=0, atol=pe_atol(50),
                 context="PositionalEncoding(16, max_len=50)", mistakes=table_mistakes(50, 16, base=(
                     None if is_close(mine, table(50, 16), rtol=0, atol=pe_atol(50)) else student_base(student))))
    if pe.dtype != torch.get_default_dtype():
        fail(f"the buffer pe is {pe.dtype}; build it in torch's default dtype ({torch.get_default_dtype()}): "
             "module.to(dtype) converts it when needed")


def test_pe_follows_to(student, device):
    """pe follows .to(device, dtype)"""
    module = student.PositionalEncoding(8, max_len=20, dropout=0.0)
    module.to(device, torch.float64)
    pe = buffer_table(module, 20, 8)
    if pe.device.type != device or pe.dtype != torch.float64:
        fail(f"after module.to({device!r}, torch.float64) the buffer pe is {pe.dtype} on {pe.device}: register "
             "it with self.register_buffer('pe', table) so that .to() converts it", PE_NOT_BUFFER)
    x = torch.randn(2, 5, 8, device=device, dtype=torch.float64)
    out = module.eval()(x)
    if not isinstance(out, torch.Tensor) or out.dtype != torch.float64 or out.device.type != device:
        fail(f"after .to({device!r}, torch.float64), a float64 input on {device} should give a float64 output on "
             f"{device}, got {describe(out)}")


def test_new_tensors_follow_the_input(student):
    """Tensors forward creates are made on the input's device (seen on torch's meta device, on every machine)"""
    module = student.PositionalEncoding(8, max_len=20, dropout=0.5).to("meta")  # in train mode: the dropout runs too
    pe = getattr(module, "pe", None)
    if not isinstance(pe, torch.Tensor) or pe.device.type != "meta":
        return  # a table that does not follow .to() is test_pe_follows_to's to tell
    check_follows_the_device(lambda: module(torch.empty(2, 5, 8, device="meta")),
                             "PositionalEncoding(8, max_len=20, dropout=0.5).to('meta') on x (2, 5, 8) on the meta "
                             "device")


CASES = [  # (batch, seq, d_model, max_len)
    (2, 5, 8, 50), (3, 1, 4, 10), (1, 12, 16, 12), (4, 7, 6, 5000),
]


@pytest.mark.critical
def test_forward_adds_positions(student, device, dtype):
    """PositionalEncoding returns x + pe[:seq] (eval mode)"""
    for batch, seq, d_model, max_len in CASES:
        module = student.PositionalEncoding(d_model, max_len=max_len, dropout=0.1).to(device, dtype).eval()
        x = torch.randn(batch, seq, d_model, device=device, dtype=dtype)
        expected = x + table(max_len, d_model)[:seq].to(device, dtype)
        # The table holds float32 values even after .to(float64): its tolerance applies to both dtypes.
        out = module(x.clone())
        assert_close(out, expected, what="x + PE[:seq]", atol=max(pe_atol(seq), 1e-5),
                     context=f"PositionalEncoding({d_model}, max_len={max_len}) in eval, x {describe(x)}",
                     mistakes=positional_mistakes(x, max_len, d_model),
                     localise=lambda out=out, x=x, module=module, max_len=max_len: forward_at_fault(out, x, module,
                                                                                                    max_len))


@given(batch=st.integers(1, 3), seq=st.integers(1, 12), half=st.integers(1, 8), extra=st.integers(0, 4),
       seed=st.integers(0, 2**31 - 1))
def test_forward_any_shape(student, batch, seq, half, extra, seed):
    """x + pe[:seq] for any batch, length (up to max_len exactly) and d_model"""
    d_model, max_len = 2 * half, seq + extra
    x = torch.randn(batch, seq, d_model, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    module = student.PositionalEncoding(d_model, max_len=max_len, dropout=0.0).to(torch.float64).eval()
    out = module(x.clone())
    assert_close(out, x + table(max_len, d_model)[:seq], what="x + PE[:seq]", atol=pe_atol(seq),
                 context=f"PositionalEncoding({d_model}, max_len={max_len}), x {describe(x)}",
                 mistakes=positional_mistakes(x, max_len, d_model),
                 localise=lambda: forward_at_fault(out, x, module, max_len))


def test_too_long_raises(student):
    """A sequence longer than max_len raises ValueError"""
    module = student.PositionalEncoding(8, max_len=10, dropout=0.0).eval()
    for seq in (11, 25):
        x = torch.randn(2, seq, 8)
        expect_value_error(lambda x=x: module(x), f"PositionalEncoding(8, max_len=10) on x {describe(x)}",
                           NO_LENGTH_CHECK)


def test_dropout_in_training_only(student, device):
    """Dropout acts on x + pe in training mode, and not at all in eval mode"""
    p, batch, seq, d_model = 0.5, 4, 20, 16
    module = student.PositionalEncoding(d_model, max_len=64, dropout=p).to(device)
    # The module's own table: this check is about dropout, the table has checks of its own.
    pe = buffer_table(module, 64, d_model).detach()
    x = torch.randn(batch, seq, d_model, device=device)
    rows = pe[:seq].to(x.dtype).expand_as(x)  # (batch, seq, d_model)
    total = x + rows
    context = f"PositionalEncoding({d_model}, dropout={p}), x {describe(x)}"
    out = module.train()(x.clone())
    if not isinstance(out, torch.Tensor) or out.shape != x.shape:
        fail(f"in training mode the output should be {describe(x)}, got {describe(out)} for {context}")
    equals_pe = float(((out - rows).abs() < 1e-6).float().mean())
    if equals_pe > 0.25:  # x dropped, pe added afterwards: dropped entries are exactly pe
        fail(f"in training mode {equals_pe:.0%} of the outputs equal pe exactly, as if x had been dropped "
             f"before the encoding was added, for {context}", DROPOUT_BEFORE_ADD)
    dropped = out == 0
    if not dropped.any():
        fail(f"in training mode with dropout={p}, no entry was zeroed for {context}", NO_DROPOUT)
    fraction = float(dropped.float().mean())
    if not 0.35 <= fraction <= 0.65:
        # About 10%: the contract's default rate, whatever rate was given.
        fail(f"in training mode {fraction:.0%} of the entries were dropped for {context}; with dropout={p} about "
             f"{p:.0%} should be: pass the `dropout` argument to nn.Dropout",
             *((DROPOUT_RATE_IGNORED,) if 0.05 <= fraction <= 0.15 else ()))
    # Where the student's output is 0, call it dropped; every other entry must be the kept sum, rescaled.
    def kept(value):
        return torch.where(dropped, torch.zeros_like(value), value / (1 - p))

    assert_close(out, kept(total), name="the training-mode output",
                 what="(x + pe[:seq]) / (1 - dropout) where not dropped", context=context, atol=1e-4,
                 mistakes={m: (lambda v=v: kept(v() if callable(v) else v))
                           for m, v in positional_mistakes(x, 64, d_model, pe).items()})
    assert_close(module.eval()(x.clone()), total, name="the eval-mode output",
                 what="x + pe[:seq] (no dropout in eval)", context=context, atol=1e-4,
                 mistakes=positional_mistakes(x, 64, d_model, pe))


def test_input_untouched_and_gradient(student, device):
    """The input is left unchanged, and the gradient with respect to x passes through unchanged"""
    module = student.PositionalEncoding(8, max_len=30, dropout=0.1).to(device).eval()
    x = torch.randn(3, 6, 8, device=device)
    check_inputs_unchanged(lambda: module(x), {"the input": x}, hint="return x + pe[:seq_len], a new tensor")
    leaf = x.clone().requires_grad_(True)
    weights = torch.randn(3, 6, 8, device=device)
    (module(leaf) * weights).sum().backward()
    if leaf.grad is None:
        fail("no gradient reached x: the output must be computed from x (no detach, no torch.no_grad)")
    assert_close(leaf.grad, weights, name="d(sum(out * w)) / dx", what="w (adding a constant passes gradients "
                 "through unchanged)", context=f"x {describe(x)}",
                 mistakes={SCALE_IN_PE: weights * math.sqrt(8)})


# ---- TokenEmbedding ---------------------------------------------------------------------------------

def test_embedding_structure(student):
    """TokenEmbedding holds one parameter, embedding.weight (vocab_size, d_model)"""
    module = student.TokenEmbedding(13, 6)
    shapes = {name: tuple(p.shape) for name, p in module.named_parameters()}
    if shapes != {"embedding.weight": (13, 6)}:
        listed = ", ".join(f"{n} {s}" for n, s in shapes.items()) or "none"
        fail("TokenEmbedding(13, 6) should have exactly one parameter, embedding.weight of shape (13, 6) "
             f"(self.embedding = nn.Embedding(vocab_size, d_model)); it has: {listed}")


EMBEDDING_CASES = [  # (vocab_size, d_model, batch, seq)
    (11, 16, 2, 5), (7, 9, 1, 1), (50, 12, 3, 8),
]


@pytest.mark.critical
def test_embedding_scaled(student, device, dtype):
    """TokenEmbedding returns embedding(tokens) * sqrt(d_model)"""
    for vocab, d_model, batch, seq in EMBEDDING_CASES:
        module = student.TokenEmbedding(vocab, d_model).to(device, dtype)
        tokens = torch.randint(0, vocab, (batch, seq), device=device)
        tokens[0, 0] = vocab - 1
        weight = module.embedding.weight.detach()
        looked_up = weight[tokens]  # (batch, seq, d_model)
        out = module(tokens)
        assert_close(out, looked_up * math.sqrt(d_model), what="embedding(tokens) * sqrt(d_model)",
                     context=f"TokenEmbedding({vocab}, {d_model}), tokens {describe(tokens)}",
                     mistakes=embedding_mistakes(looked_up, d_model),
                     localise=lambda out=out, looked_up=looked_up, d_model=d_model: embedding_at_fault(
                         out, looked_up, d_model))


def test_embedding_gradient(student, device):
    """Gradients reach embedding.weight, scaled by sqrt(d_model)"""
    vocab, d_model = 10, 16
    module = student.TokenEmbedding(vocab, d_model).to(device)
    tokens = torch.tensor([[1, 3, 3, 0], [9, 1, 2, 2]], device=device)
    weights = torch.randn(2, 4, d_model, device=device)
    (module(tokens) * weights).sum().backward()
    grad = module.embedding.weight.grad
    if grad is None:
        fail("no gradient reached embedding.weight: look the tokens up with self.embedding(tokens)")
    summed = torch.zeros(vocab, d_model, device=device).index_add_(0, tokens.reshape(-1),
                                                                   weights.reshape(-1, d_model))
    expected = summed * math.sqrt(d_model)
    # padding_idx p: row p gets no gradient. Each token the input holds is a candidate p.
    padded = {Mistake(PADDING_IDX.id, f"{PADDING_IDX.explanation} (yours: padding_idx={p})"):
              (lambda p=p: expected.index_fill(0, torch.tensor([p], device=device), 0.0))
              for p in tokens.unique().tolist()}
    assert_close(grad, expected, name="gradient of embedding.weight",
                 what="sqrt(d_model) times the summed upstream gradients of each token's rows",
                 context=f"TokenEmbedding({vocab}, {d_model})",
                 mistakes={**embedding_mistakes(summed, d_model), **padded})


# ---- half precision (CUDA only) ---------------------------------------------------------------------

@pytest.mark.dtypes(cpu=(), cuda=(torch.float16, torch.bfloat16))
def test_half_precision_forward(student, device, dtype):
    """Half-precision forward of both modules keeps the dtype and the values"""
    d_model = 16
    embed = student.TokenEmbedding(20, d_model).to(device, dtype)
    module = student.PositionalEncoding(d_model, max_len=64, dropout=0.0).to(device, dtype).eval()
    tokens = torch.randint(0, 20, (2, 9), device=device)
    looked_up = embed.embedding.weight.detach()[tokens]
    embedded = embed(tokens)
    assert_close(embedded, looked_up * math.sqrt(d_model), what="embedding(tokens) * sqrt(d_model)",
                 context=f"TokenEmbedding(20, {d_model}) in {dtype}", mistakes=embedding_mistakes(looked_up, d_model))
    x = embedded.detach()
    # One rounding of pe to half precision, one of the sum: 2 ulps of values up to ~8.
    atol = 8e-3 if dtype == torch.float16 else 6e-2
    out = module(x.clone())
    assert_close(out, (x.double() + table(64, d_model)[:9].to(device)).to(dtype), what="x + PE[:seq]",
                 atol=atol, context=f"PositionalEncoding({d_model}) in {dtype}",
                 mistakes=positional_mistakes(x, 64, d_model), localise=lambda: forward_at_fault(out, x, module, 64))
