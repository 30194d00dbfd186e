"""Graders of kata 9.4: the signature's default (course spec: `MultiHeadAttention(d_model, n_heads, dropout=0.0)`).

Hidden from students. The other checks pass dropout; this one leaves it out and compares the student's module
with itself given dropout=0.0 (kata.toolkit.defaults): no dropout unless asked for.
"""

import torch

from kata.toolkit.defaults import check_module_defaults


def test_dropout_default(student):
    """MultiHeadAttention(d_model, n_heads) has no dropout (the signature's default, dropout=0.0)"""
    x = torch.randn(2, 5, 12)  # (batch, seq, d_model)
    check_module_defaults(lambda **kw: student.MultiHeadAttention(12, 3, **kw), lambda mha: mha(x, x, x),
                          {"dropout": 0.0}, signature="MultiHeadAttention(12, 3)")
