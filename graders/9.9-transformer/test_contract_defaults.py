"""Graders of kata 9.9: the signature's defaults and the tied vocabularies' error (course spec:
`Transformer(src_vocab_size, tgt_vocab_size, d_model=512, n_heads=8, n_layers=6, d_ff=2048, dropout=0.1,
max_len=5000, norm_first=False, tie_embeddings=False)`).

Hidden from students. The other checks pass every argument but the sizes; this one leaves the others out (the
sizes small) and compares the student's model with itself given the contract's values (kata.toolkit.defaults).
"""

import torch

from kata.toolkit import Mistake, fail, remote
from kata.toolkit.defaults import check_module_defaults

ONE_WAY = Mistake(
    "tied-sizes-checked-one-way",
    "tie_embeddings=True raises ValueError for one order of the sizes only (src_vocab_size < tgt_vocab_size, or >): "
    "one matrix cannot serve two vocabularies of different sizes in either order, so test src_vocab_size != "
    "tgt_vocab_size")

# d_model, n_layers and d_ff are left out by test_base_parameter_count (the base model's 63,082,496 parameters);
# n_heads changes no parameter count.
DEFAULTS = {"n_heads": 8, "dropout": 0.1, "max_len": 5000, "norm_first": False, "tie_embeddings": False}
# What stays explicit while another argument is left out: a model of one small layer.
SMALL = {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 16, "dropout": 0.1, "max_len": 16,
         "norm_first": False, "tie_embeddings": False}


def test_transformer_defaults(student):
    """Transformer(src_vocab_size, tgt_vocab_size) has 8 heads, dropout 0.1, 5000 positions, post-norm, untied"""
    src, tgt = torch.randint(0, 7, (2, 5)), torch.randint(0, 7, (2, 4))  # (batch, src_len), (batch, tgt_len)
    check_module_defaults(lambda **kw: student.Transformer(7, 7, **kw), lambda model: model(src, tgt), DEFAULTS,
                          base=SMALL, signature="Transformer(7, 7)")


def test_tied_vocabularies_differ_both_ways(student):
    """tie_embeddings=True raises ValueError for any two different vocabulary sizes, larger or smaller"""
    refused = False  # (7, 9) raised ValueError: the smaller source was refused
    for src_vocab, tgt_vocab in ((7, 9), (9, 7)):
        call = f"Transformer({src_vocab}, {tgt_vocab}, d_model=8, n_heads=2, n_layers=1, d_ff=8, tie_embeddings=True)"
        try:
            student.Transformer(src_vocab, tgt_vocab, d_model=8, n_heads=2, n_layers=1, d_ff=8, tie_embeddings=True)
        except (NotImplementedError, remote.StudentForbidden):
            raise
        except remote.StudentError as exc:
            if "ValueError" in exc.mro:
                refused = True
                continue
            fail(f"{call} raised {exc.type_name} ({exc}), expected ValueError: one matrix cannot serve "
                 f"vocabularies of {src_vocab} and {tgt_vocab} tokens")
        fail(f"{call} should raise ValueError: one matrix cannot serve vocabularies of {src_vocab} and "
             f"{tgt_vocab} tokens" + (" (it does when src_vocab_size is the smaller)" if refused else ""),
             *((ONE_WAY,) if refused else ()))
