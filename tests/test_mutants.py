"""bench/mutants.py, the mutation testing of the graders: its machinery on a handful of mutants.

The mutants are Cosmic Ray's, made from the reference solutions of the repository, and graded by the
real graders through a warm pool, as the bench grades them (the whole course, `python bench/mutants.py`,
is 812 grading runs: not a test)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from kata.course import load_course

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_mutants", REPO / "bench" / "mutants.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while building the class
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def mutants_of(bench, kata_id: str):
    kata = load_course(REPO).find(kata_id)
    mutants, skipped = bench.enumerate_mutants(kata.id, kata.solution.read_text(encoding="utf-8"))
    return {(m.operator, m.before, m.after): m for m in mutants}, skipped


def test_mutants_are_keyed_by_what_changed_and_skip_type_hints(bench):
    softmax, skipped = mutants_of(bench, "9.1")
    plus = softmax["ReplaceBinaryOperator_Sub_Add", "e = torch.exp(x - m)", "e = torch.exp(x + m)"]
    assert plus.function == "softmax" and plus.line > 0
    assert plus.key == ("9.1", "ReplaceBinaryOperator_Sub_Add", "softmax", "e = torch.exp(x - m)",
                        "e = torch.exp(x + m)", 0)
    assert not skipped  # 9.1's hints hold no operator
    attention, skipped = mutants_of(bench, "9.4")
    assert skipped["annotation"] > 0  # `torch.Tensor | None`: not mutated
    assert not any("torch.Tensor &" in m.after for m in attention.values())
    assert all(" # " not in m.before for m in attention.values())  # comments are no part of the key


def test_a_mutants_statement_is_its_lines_and_a_blocks_is_its_header(bench):
    source = ("def f(x,\n      y=1):\n    z = g(x,\n          y)\n"
              "    for i in range(3):\n        z = z + i\n    return z\n")
    statements = bench._statements(source)
    assert (1, 2) in statements  # the def's header, not its body
    assert (3, 4) in statements and (5, 5) in statements and (6, 6) in statements and (7, 7) in statements
    mutants, _ = bench.enumerate_mutants("x", source, ["core/ReplaceBinaryOperator_Add_Sub"])
    assert [m.statement for m in mutants] == [[6]]


@pytest.mark.slow(seconds=12)  # five grading runs and a zygote
def test_the_graders_catch_a_broken_softmax_and_the_table_names_an_equivalent_mutant(bench):
    softmax, _ = mutants_of(bench, "9.1")
    layer_norm, _ = mutants_of(bench, "9.2")
    attention, _ = mutants_of(bench, "9.4")
    broken = softmax["ReplaceBinaryOperator_Sub_Add", "e = torch.exp(x - m)", "e = torch.exp(x + m)"]
    not_normalised = softmax["ReplaceBinaryOperator_Div_Mul", "return e / e.sum(dim=dim, keepdim=True)",
                             "return e * e.sum(dim=dim, keepdim=True)"]
    shifted_bits = softmax["ReplaceBinaryOperator_Sub_RShift", "e = torch.exp(x - m)", "e = torch.exp(x >> m)"]
    boolean_dim = layer_norm["ReplaceUnaryOperator_USub_Not", "mean = x.mean(dim=-1, keepdim=True)",
                             "mean = x.mean(dim=not 1, keepdim=True)"]
    same = attention["ReplaceComparisonOperator_Gt_GtE", "if self.training and self.dropout.p > 0:",
                     "if self.training and self.dropout.p >= 0:"]
    table = bench.load_equivalent()
    assert same.key in table and broken.key not in table and not_normalised.key not in table
    same.equivalent = table[same.key]
    graded = bench.grade(load_course(REPO), {"9.1": [broken, not_normalised, shifted_bits], "9.2": [boolean_dim],
                                             "9.4": [same]}, jobs=1)

    assert broken.caught and broken.named and "no-max-subtraction" in broken.diagnoses
    # e·sum(e) is the softmax times sum(e)² along dim: the exponentials are right, the division is not.
    assert not_normalised.caught and not not_normalised.raised
    assert not_normalised.localised and not_normalised.diagnoses == ["fault-in-normalisation"]
    # `>>` on floats raises, and torch's words are read in general terms: named, though by no pattern of 9.1's own.
    assert shifted_bits.caught and shifted_bits.raised and shifted_bits.diagnoses == ["bit-operator-on-floats"]
    assert shifted_bits.named and shifted_bits.named_in_general_terms and not broken.named_in_general_terms
    # mean(dim=False) raises in the mutated statement itself, with no diagnosis: the traceback shows that line.
    assert boolean_dim.caught and boolean_dim.raised and not boolean_dim.named and not boolean_dim.localised
    assert boolean_dim.raised_at == boolean_dim.statement == [boolean_dim.line]
    assert boolean_dim.raised_at_mutation and not broken.raised_at_mutation and not shifted_bits.raised_at_mutation
    assert not same.caught, "a mutant listed as equivalent lost points: the table is wrong"
    summary = bench.summarise([m for ms in graded.values() for m in ms])
    assert (summary["mutants"], summary["equivalent"], summary["caught"]) == (5, 1, 4)
    assert (summary["named"], summary["named_in_general_terms"], summary["localised"]) == (2, 1, 1)
    assert (summary["raised"], summary["raised_at_mutation"]) == (1, 1)
    assert summary["named_or_localised_share"] == 3 / 4 and summary["or_raised_at_mutation_share"] == 1.0
    assert summary["caught_share"] == 1.0 and summary["survivors"] == []
