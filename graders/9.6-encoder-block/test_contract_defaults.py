"""Graders of kata 9.6: the signatures' defaults (course spec: `EncoderBlock(d_model, n_heads, d_ff, dropout=0.1,
norm_first=False)`, `Encoder(n_layers, d_model, n_heads, d_ff, dropout=0.1, norm_first=False)`).

Hidden from students. The other checks pass every argument; these leave one out at a time and compare the
student's module with itself given the contract's value (kata.toolkit.defaults): post-norm, as in the paper,
and dropout 0.1, unless asked otherwise.
"""

import torch

from kata.toolkit.defaults import check_module_defaults

DEFAULTS = {"dropout": 0.1, "norm_first": False}


def test_encoder_block_defaults(student):
    """EncoderBlock(d_model, n_heads, d_ff) is post-norm with dropout 0.1 (the signature's defaults)"""
    x = torch.randn(2, 5, 8)  # (batch, seq, d_model)
    check_module_defaults(lambda **kw: student.EncoderBlock(8, 2, 16, **kw), lambda block: block(x),
                          DEFAULTS, signature="EncoderBlock(8, 2, 16)")


def test_encoder_defaults(student):
    """Encoder(n_layers, d_model, n_heads, d_ff) is post-norm (no final norm) with dropout 0.1"""
    x = torch.randn(2, 5, 8)  # (batch, seq, d_model)
    check_module_defaults(lambda **kw: student.Encoder(2, 8, 2, 16, **kw), lambda encoder: encoder(x),
                          DEFAULTS, signature="Encoder(2, 8, 2, 16)")
